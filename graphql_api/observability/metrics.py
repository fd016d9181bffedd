"""Prometheus metrics of the API, and the /metrics endpoint on its own port.

Metrics are process-wide (prometheus-client's registry is), recorded for every request by the
access log. With several worker processes, ``server.py run`` points every worker at one fresh
directory (``PROMETHEUS_MULTIPROC_DIR``, prometheus-client's multiprocess mode) and serves
/metrics from the parent, summing the workers' files, so the figures cover all workers; each
worker's process metrics (CPU, memory, file descriptors) come labelled by its pid
(observability/process.py).

What an operator alerts on:
- ``hr_requests_total{route, operation, status}``: every HTTP request by its status code, so
  an outage (503, 504) or a wave of 401s is a rate; ``hr_request_duration_seconds`` for latency.
- ``hr_requests_with_error_total{code}``: requests whose response carried an error of that
  ``extensions.code``, once per request per code however many fields failed (an employee's
  directory query with nine FORBIDDEN fields counts one). A partial response (200, some fields
  UNAVAILABLE) is counted here. This replaced ``hr_graphql_errors_total``, which counted errors.
- ``hr_rate_limited_requests_total{tenant}``: requests the tenant rate limit refused.
- ``hr_unlisted_documents_total{document}``: with TRUSTED_DOCUMENTS_MODE=audit, documents that
  ran though the manifest does not list them, by SHA-256 (graphql_api/http/unlisted.py): what
  is left to add before enforcing. The first METRICS_MAX_OPERATIONS hashes a process sees are
  labels, the rest ``other`` (a caller chooses the text, so it must not choose the series).
- ``hr_deprecated_selections_total{tenant, operation, member}``: operations that ran selecting
  a field, argument, input field or enum value marked ``@deprecated`` (``member``, a schema
  coordinate such as ``Employee.nickname``: the schema bounds it), by organisation and
  operation name, both bounded as above; ``hr_deprecated_last_seen_timestamp_seconds{member}``
  says when one was last selected. What is left to migrate before removing a member (docs
  "Evolving the schema").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from graphql_api.execution.errors import Code
from graphql_api.observability.labels import MAX_VALUE_LENGTH, OTHER, BoundedLabel, OperationNames
from graphql_api.observability.process import LiveWorkersCollector
from graphql_api.observability.record import Outcome

# Seconds; from a cached single read (~5 ms) to the slowest a client should wait.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUEST_SECONDS = Histogram(
    "hr_request_duration_seconds",
    "HTTP requests by route and GraphQL operation name, and how long they took",
    ["route", "operation"],
    buckets=LATENCY_BUCKETS,
)
REQUESTS = Counter(
    "hr_requests", "HTTP requests by route, GraphQL operation name and status code", ["route", "operation", "status"]
)
ERROR_REQUESTS = Counter(
    "hr_requests_with_error",
    "Requests whose response carried an error of this extensions.code (once per request per code)",
    ["code"],
)
RATE_LIMITED = Counter("hr_rate_limited_requests", "Requests refused by the tenant rate limit, by tenant", ["tenant"])
UNLISTED_DOCUMENTS = Counter(
    "hr_unlisted_documents",
    "Documents run though the trusted documents manifest does not list them (audit mode), by SHA-256",
    ["document"],
)
DEPRECATED_SELECTIONS = Counter(
    "hr_deprecated_selections",
    "Operations run that selected a member marked @deprecated, by tenant, operation name and member",
    ["tenant", "operation", "member"],
)
DEPRECATED_LAST_SEEN = Gauge(
    "hr_deprecated_last_seen_timestamp_seconds",
    "When a member marked @deprecated was last selected by an operation that ran (Unix time)",
    ["member"],
    multiprocess_mode="max",
)
IN_FLIGHT = Gauge("hr_requests_in_flight", "HTTP requests being served", multiprocess_mode="livesum")
DYNAMODB_CALLS = Counter("hr_dynamodb_calls", "DynamoDB calls, by tenant", ["tenant"])
READ_UNITS = Counter("hr_dynamodb_read_units", "DynamoDB read capacity units consumed, by tenant", ["tenant"])
WRITE_UNITS = Counter("hr_dynamodb_write_units", "DynamoDB write capacity units consumed, by tenant", ["tenant"])

# The status label of a request whose client went away before any response started.
NO_STATUS = "none"

# The statuses /graphql answers with, and the operation labels every server has: their series
# exist at zero from the start (``initialise``), so ``increase()`` counts a first error too
# (a counter series that appears at 1 has no increase). Every ``code`` is initialised too.
STATUSES = (200, 400, 401, 403, 404, 405, 406, 408, 413, 415, 429, 500, 503, 504)
GRAPHQL_ROUTE = "/graphql"
BUILT_IN_OPERATIONS = ("none", "anonymous", OTHER)


def initialise(operations: tuple[str, ...] = ()) -> None:
    """Every known series at zero: each error code, and /graphql's statuses for the built-in
    operation labels and those METRICS_OPERATIONS names (a name first learned later, or a
    trusted document's, starts at its first request: alert on the sums or on the codes)."""
    for code in Code:
        ERROR_REQUESTS.labels(code.value)
    for operation in (*BUILT_IN_OPERATIONS, *operations):
        for status in STATUSES:
            REQUESTS.labels(GRAPHQL_ROUTE, operation[:MAX_VALUE_LENGTH], str(status))


@dataclass(frozen=True, slots=True)
class Labels:
    route: str
    operation: str
    tenant: str
    status: str


class Metrics:
    """Turns finished requests into bounded labels (observability/labels.py) and figures."""

    def __init__(
        self,
        *,
        max_operations: int,
        max_tenants: int,
        operation_min_tenants: int = 2,
        operations: tuple[str, ...] = (),
        trusted_operations: frozenset[str] | None = None,
    ) -> None:
        self.operations = OperationNames(
            limit=max_operations, min_tenants=operation_min_tenants, configured=operations, trusted=trusted_operations
        )
        self._tenant = BoundedLabel(max_tenants)
        initialise(operations)

    def labels(self, outcome: Outcome) -> Labels:
        if outcome.tenant is not None:
            for ran in outcome.ran:
                self.operations.ran(ran, outcome.tenant)
        # Routes are the app's own few paths; anything unmatched is one value.
        route = outcome.route or "unmatched"
        # "none": no GraphQL ran (another route, or refused before parsing).
        operation = "none"
        if len(outcome.operations) > 1:
            operation = "batch"
        elif outcome.operations:
            name = outcome.operations[0]
            operation = "anonymous" if name is None else self.operations.label(name)
        tenant = self._tenant(outcome.tenant) if outcome.tenant is not None else "none"
        status = str(outcome.status) if outcome.status is not None else NO_STATUS
        return Labels(route, operation, tenant, status)

    def observe(self, outcome: Outcome, labels: Labels) -> None:
        REQUEST_SECONDS.labels(labels.route, labels.operation).observe(outcome.duration_seconds)
        REQUESTS.labels(labels.route, labels.operation, labels.status).inc()
        for code in outcome.error_codes:
            ERROR_REQUESTS.labels(code).inc()
        if Code.RATE_LIMITED.value in outcome.error_codes:
            RATE_LIMITED.labels(labels.tenant).inc()
        if outcome.deprecated:
            now = time.time()
            for name, member in outcome.deprecated:
                operation = "anonymous" if name is None else self.operations.label(name)
                DEPRECATED_SELECTIONS.labels(labels.tenant, operation, member).inc()
                DEPRECATED_LAST_SEEN.labels(member).set(now)
        if outcome.dynamodb_calls:
            DYNAMODB_CALLS.labels(labels.tenant).inc(outcome.dynamodb_calls)
            READ_UNITS.labels(labels.tenant).inc(outcome.read_units)
            WRITE_UNITS.labels(labels.tenant).inc(outcome.write_units)


def serve_metrics(host: str, port: int, multiprocess_dir: str | None = None) -> WSGIServer:
    """Serve /metrics on ``host:port`` from a daemon thread; ``shutdown()`` the result to stop.

    With ``multiprocess_dir``, the figures are the sum of every live or past worker's files in
    it, not this process's own, with each live worker's process metrics by pid.
    """
    registry = REGISTRY
    if multiprocess_dir is not None:
        registry = CollectorRegistry()
        registry.register(LiveWorkersCollector(multiprocess_dir))
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server
