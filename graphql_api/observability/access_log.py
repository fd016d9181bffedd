"""One log line per HTTP request, with what it did and cost, and the metrics of it.

A pure ASGI middleware, outermost, so it sees every request, including those a middleware
refuses (401, 408, 413, 503, 504; observability/refusals.py counts their codes). It starts the request's
record (observability/record.py), lets the app fill it in, and when the response is sent
(or the request fails) writes the line on the ``hr.access`` logger and records the metrics;
under AWS Lambda the line also carries them as CloudWatch EMF (observability/emf.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphql_api.log_output import FIELDS
from graphql_api.observability.emf import emf_fields
from graphql_api.observability.metrics import IN_FLIGHT, Metrics
from graphql_api.observability.record import Outcome, start
from graphql_api.observability.tracing import span

log = logging.getLogger("hr.access")


class AccessLog:
    def __init__(self, app: ASGIApp, *, metrics: Metrics, emf: bool = False) -> None:
        self.app = app
        self.metrics = metrics
        self.emf = emf

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        record = start(scope)
        status: int | None = None

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        started = time.perf_counter()
        IN_FLIGHT.inc()
        method = str(scope.get("method", ""))
        with span(f"HTTP {method}", "server", {"http.request.method": method}) as current:
            try:
                await self.app(scope, receive, send_and_note)
            except Exception:
                status = status or 500  # the server's error handler answers 500
                raise
            finally:
                IN_FLIGHT.dec()
                outcome = Outcome.of(record, scope, status, time.perf_counter() - started)
                self._write(outcome)
                if current is not None:
                    current.update_name(f"{method} {outcome.route or 'unmatched'}")
                    current.set_attribute("hr.request_id", outcome.request_id)
                    if status is not None:
                        current.set_attribute("http.response.status_code", status)

    def _write(self, outcome: Outcome) -> None:
        labels = self.metrics.labels(outcome)
        self.metrics.observe(outcome, labels)
        fields = access_fields(outcome)
        if self.emf:
            fields.update(emf_fields(outcome, labels, int(time.time() * 1000)))
        log.info(access_text(outcome), extra={FIELDS: fields})


def access_fields(outcome: Outcome) -> dict[str, Any]:
    return {
        "requestId": outcome.request_id,
        "method": outcome.method,
        "path": outcome.path,
        "status": outcome.status,
        "durationMs": round(outcome.duration_seconds * 1000, 3),
        "tenant": outcome.tenant,
        "operation": outcome.operation,
        "errors": outcome.error_codes,
        "dynamodbCalls": outcome.dynamodb_calls,
        "rcu": outcome.read_units,
        "wcu": outcome.write_units,
    }


def access_text(outcome: Outcome) -> str:
    """The line's message: all of it for LOG_FORMAT=text, a summary in JSON lines."""
    errors = " ".join(f"{code}x{count}" for code, count in outcome.error_codes.items()) or "-"
    return (
        f"{outcome.method} {outcome.path} {outcome.status} {outcome.duration_seconds * 1000:.1f}ms"
        f" op={outcome.operation or '-'} tenant={outcome.tenant or '-'} errors={errors}"
        f" dynamodb={outcome.dynamodb_calls} rcu={outcome.read_units:g} wcu={outcome.write_units:g}"
        f" id={outcome.request_id}"
    )
