"""OpenTelemetry tracing, optional (``pip install '.[otel]'``), on when an OTLP endpoint is set.

Spans: one per HTTP request (server), one per GraphQL operation inside it, and one per DynamoDB
call inside that (client, so retries stay inside one call's span): for the boto3 client's calls
(writes, sign-in) from botocore's event hooks, for the read path's on the event loop from its
client's call observers (datastore/async_client.py).
None per field: a query resolves thousands of fields, and their cost is the DynamoDB calls.
Spans go to ``OTEL_EXPORTER_OTLP_ENDPOINT`` over OTLP/HTTP in batches; the batch left at exit
is flushed then. The tracer is this module's own, not the global one, so nothing else in the
process starts exporting because this is on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from opentelemetry.trace import Span, Tracer

    from datastore.async_client import CallObservers

SpanKindName = Literal["server", "internal", "client"]
_SPAN: Final = "hr_span"

_tracer: Tracer | None = None


def configure_tracing(endpoint: str | None, client: DynamoDBClient, loop_calls: CallObservers) -> None:
    """Export spans to ``endpoint`` (None: tracing stays off) and trace ``client``'s calls and
    those of the event loop's client beside it (``loop_calls``, its observers)."""
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
    events = client.meta.events
    events.register("before-call.dynamodb", _before_call, unique_id="hr-trace-before")
    events.register("after-call.dynamodb", _after_call, unique_id="hr-trace-after")
    events.register("after-call-error.dynamodb", _after_call, unique_id="hr-trace-error")
    loop_calls.add(_call_span)


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


def _before_call(model: Any, context: dict[str, Any], **_: Any) -> None:
    if _tracer is not None:
        # The parent is the caller's current span: DynamoDB calls run on the I/O pool in a copy
        # of the request's context (RequestContext.run), so that is the operation's span.
        context[_SPAN] = _tracer.start_span(
            f"DynamoDB {model.name}",
            kind=_kind("client"),
            attributes={"db.system": "dynamodb", "db.operation": model.name},
        )


def _after_call(context: dict[str, Any], exception: Exception | None = None, **_: Any) -> None:
    current: Span | None = context.pop(_SPAN, None)
    if current is not None:
        if exception is not None:
            current.record_exception(exception)
        current.end()


@contextmanager
def _call_span(operation: str) -> Iterator[None]:
    """The span of one call on the event loop, as ``_before_call`` and ``_after_call`` make it for
    boto3's: its parent is the current span of the loading task, the operation's."""
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
