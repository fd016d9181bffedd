"""Prometheus metrics of the API, and the /metrics endpoint on its own port.

Metrics are process-wide (prometheus-client's registry is), recorded for every request by the
access log. With several worker processes, ``server.py run`` points every worker at one fresh
directory (``PROMETHEUS_MULTIPROC_DIR``, prometheus-client's multiprocess mode) and serves
/metrics from the parent, summing the workers' files, so the figures cover all workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

from graphql_api.observability.labels import BoundedLabel
from graphql_api.observability.record import Outcome

# Seconds; from a cached single read (~5 ms) to the slowest a client should wait.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUEST_SECONDS = Histogram(
    "hr_request_duration_seconds",
    "HTTP requests by route and GraphQL operation name, and how long they took",
    ["route", "operation"],
    buckets=LATENCY_BUCKETS,
)
ERRORS = Counter("hr_graphql_errors", "Errors in responses, by extensions.code", ["code"])
IN_FLIGHT = Gauge("hr_requests_in_flight", "HTTP requests being served", multiprocess_mode="livesum")
DYNAMODB_CALLS = Counter("hr_dynamodb_calls", "DynamoDB calls, by tenant", ["tenant"])
READ_UNITS = Counter("hr_dynamodb_read_units", "DynamoDB read capacity units consumed, by tenant", ["tenant"])
WRITE_UNITS = Counter("hr_dynamodb_write_units", "DynamoDB write capacity units consumed, by tenant", ["tenant"])


@dataclass(frozen=True, slots=True)
class Labels:
    route: str
    operation: str
    tenant: str


class Metrics:
    """Turns finished requests into bounded labels (observability/labels.py) and figures."""

    def __init__(self, *, max_operations: int, max_tenants: int) -> None:
        self._operation = BoundedLabel(max_operations)
        self._tenant = BoundedLabel(max_tenants)

    def labels(self, outcome: Outcome) -> Labels:
        # Routes are the app's own few paths; anything unmatched is one value.
        route = outcome.route or "unmatched"
        # "none": no GraphQL ran (another route, or refused before parsing).
        operation = self._operation(outcome.operation or "anonymous") if outcome.operations else "none"
        tenant = self._tenant(outcome.tenant) if outcome.tenant is not None else "none"
        return Labels(route, operation, tenant)

    def observe(self, outcome: Outcome, labels: Labels) -> None:
        REQUEST_SECONDS.labels(labels.route, labels.operation).observe(outcome.duration_seconds)
        for code, count in outcome.error_codes.items():
            ERRORS.labels(code).inc(count)
        if outcome.dynamodb_calls:
            DYNAMODB_CALLS.labels(labels.tenant).inc(outcome.dynamodb_calls)
            READ_UNITS.labels(labels.tenant).inc(outcome.read_units)
            WRITE_UNITS.labels(labels.tenant).inc(outcome.write_units)


def serve_metrics(host: str, port: int, multiprocess_dir: str | None = None) -> WSGIServer:
    """Serve /metrics on ``host:port`` from a daemon thread; ``shutdown()`` the result to stop.

    With ``multiprocess_dir``, the figures are the sum of every worker's files in it, not
    this process's own.
    """
    registry = REGISTRY
    if multiprocess_dir is not None:
        registry = CollectorRegistry()
        # prometheus-client leaves this constructor unannotated; it registers itself.
        MultiProcessCollector(registry, path=multiprocess_dir)  # type: ignore[no-untyped-call]
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server
