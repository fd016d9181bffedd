"""CloudWatch Embedded Metric Format: the request's figures inside its access-log line.

Under AWS Lambda there is no process to scrape, so the access-log line itself carries the
metrics: CloudWatch Logs reads the ``_aws`` block and records the named top-level members as
metrics, with the dimensions it lists. Dimension values are the bounded labels of
observability/labels.py, so the number of CloudWatch metrics stays bounded too.
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html

Namespace ``HrApi``:
- ``Latency`` (ms) and ``Requests`` by ``Operation``, by ``Status`` (the HTTP status code), and
  with no dimension (the whole API: what the template's latency alarm reads);
- ``DynamoDBCalls``, ``ReadCapacityUnits``, ``WriteCapacityUnits`` by ``Tenant``;
- ``RateLimited`` by ``Tenant``, 1 for a request the tenant rate limit refused;
- ``Errors.<CODE>``, no dimension: 1 for a request whose response carried that code, once per
  request however many errors had it (the template's UNAVAILABLE and TIMEOUT alarms read these).
deploy/cloudformation.py builds its alarms from these names.
"""

from __future__ import annotations

from typing import Any, Final

from graphql_api.execution.errors import Code
from graphql_api.observability.metrics import Labels
from graphql_api.observability.record import Outcome

NAMESPACE: Final = "HrApi"
# Top-level members that hold dimension values (distinct from the log's own fields, which
# keep the true, unbounded values and may be null).
OPERATION: Final = "Operation"
TENANT: Final = "Tenant"
STATUS: Final = "Status"
# Metric names.
LATENCY: Final = "Latency"
REQUESTS: Final = "Requests"
RATE_LIMITED: Final = "RateLimited"
# The dimension sets of Latency and Requests; [] is the API as a whole.
REQUEST_DIMENSIONS: Final[list[list[str]]] = [[OPERATION], [STATUS], []]


def error_metric(code: str) -> str:
    """The metric counting requests with an error of ``code``: ``Errors.UNAVAILABLE``."""
    return f"Errors.{code}"


def emf_fields(outcome: Outcome, labels: Labels, timestamp_ms: int) -> dict[str, Any]:
    """The members to add to the access-log line: the ``_aws`` block and the metric values."""
    errors = {error_metric(code): 1 for code in outcome.error_codes}
    directives: list[dict[str, Any]] = [
        {
            "Namespace": NAMESPACE,
            "Dimensions": REQUEST_DIMENSIONS,
            "Metrics": [{"Name": LATENCY, "Unit": "Milliseconds"}, {"Name": REQUESTS, "Unit": "Count"}],
        },
        {
            "Namespace": NAMESPACE,
            "Dimensions": [[TENANT]],
            "Metrics": [
                {"Name": "DynamoDBCalls", "Unit": "Count"},
                {"Name": "ReadCapacityUnits", "Unit": "Count"},
                {"Name": "WriteCapacityUnits", "Unit": "Count"},
            ],
        },
    ]
    rate_limited = Code.RATE_LIMITED.value in outcome.error_codes
    if rate_limited:
        directives.append(
            {"Namespace": NAMESPACE, "Dimensions": [[TENANT]], "Metrics": [{"Name": RATE_LIMITED, "Unit": "Count"}]}
        )
    if errors:
        metrics = [{"Name": name, "Unit": "Count"} for name in errors]
        directives.append({"Namespace": NAMESPACE, "Dimensions": [[]], "Metrics": metrics})
    return {
        "_aws": {"Timestamp": timestamp_ms, "CloudWatchMetrics": directives},
        OPERATION: labels.operation,
        TENANT: labels.tenant,
        STATUS: labels.status,
        LATENCY: round(outcome.duration_seconds * 1000, 3),
        REQUESTS: 1,
        "DynamoDBCalls": outcome.dynamodb_calls,
        "ReadCapacityUnits": outcome.read_units,
        "WriteCapacityUnits": outcome.write_units,
        **({RATE_LIMITED: 1} if rate_limited else {}),
        **errors,
    }
