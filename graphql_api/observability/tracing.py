"""OpenTelemetry tracing, optional (``pip install '.[otel]'``), on when an OTLP endpoint is set.

Spans: one per HTTP request (server), one per GraphQL operation inside it, and one per DynamoDB
call inside that (client, so retries stay inside one call's span), from the call observers of
the one data-plane client on the event loop (datastore/aws/client.py): its parent is the
span current in the task that awaits the call.
None per field: a query resolves thousands of fields, and their cost is the DynamoDB calls.
Spans go to ``OTEL_EXPORTER_OTLP_ENDPOINT`` over OTLP/HTTP in batches; the batch left at exit
is flushed then. The tracer is this module's own, not the global one, so nothing else in the
process starts exporting because this is on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from datastore.aws.client import CallObservers

SpanKindName = Literal["server", "internal", "client"]

_tracer: Tracer | None = None


def configure_tracing(endpoint: str | None, calls: CallObservers) -> None:
    """Export spans to ``endpoint`` (None: tracing stays off) and trace the DynamoDB calls of
    the client whose observers ``calls`` are (``AsyncDynamo.observers``)."""
    global _tracer  # one tracer per process, like the metrics registry
    if endpoint is None:
        return
    if _tracer is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create({"service.name": "hr-api"}))
        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
        provider.add_span_processor(BatchSpanProcessor(exporter))
        _tracer = provider.get_tracer("hr-api")
    calls.add(_call_span)


@contextmanager
def span(name: str, kind: SpanKindName, attributes: Mapping[str, str] | None = None) -> Iterator[Span | None]:
    """A span around the block, current inside it; None (and nothing recorded) when off."""
    if _tracer is None:
        yield None
        return
    with _tracer.start_as_current_span(name, kind=_kind(kind), attributes=dict(attributes or {})) as current:
        yield current


def _kind(name: SpanKindName) -> Any:
    from opentelemetry.trace import SpanKind

    return {"server": SpanKind.SERVER, "internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}[name]


@contextmanager
def _call_span(operation: str) -> Iterator[None]:
    """The span of one DynamoDB call, every attempt inside it: its parent is the current span of
    the task awaiting it (the operation's)."""
    if _tracer is None:
        yield
        return
    current = _tracer.start_span(
        f"DynamoDB {operation}",
        kind=_kind("client"),
        attributes={"db.system": "dynamodb", "db.operation": operation},
    )
    try:
        yield
    except Exception as error:
        current.record_exception(error)
        raise
    finally:
        current.end()
