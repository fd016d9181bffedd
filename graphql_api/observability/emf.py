"""CloudWatch Embedded Metric Format: the request's figures inside its access-log line.

Under AWS Lambda there is no process to scrape, so the access-log line itself carries the
metrics: CloudWatch Logs reads the ``_aws`` block and records the named top-level members as
metrics, with the dimensions it lists. Dimension values are the bounded labels of
observability/labels.py, so the number of CloudWatch metrics stays bounded too.
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
"""

from __future__ import annotations

from typing import Any, Final

from graphql_api.observability.metrics import Labels
from graphql_api.observability.record import Outcome

NAMESPACE: Final = "HrApi"
# Top-level members that hold dimension values (distinct from the log's own fields, which
# keep the true, unbounded values and may be null).
OPERATION: Final = "Operation"
TENANT: Final = "Tenant"


def emf_fields(outcome: Outcome, labels: Labels, timestamp_ms: int) -> dict[str, Any]:
    """The members to add to the access-log line: the ``_aws`` block and the metric values."""
    errors = {f"Errors.{code}": count for code, count in outcome.error_codes.items()}
    directives: list[dict[str, Any]] = [
        {
            "Namespace": NAMESPACE,
            "Dimensions": [[OPERATION]],
            "Metrics": [{"Name": "Latency", "Unit": "Milliseconds"}, {"Name": "Requests", "Unit": "Count"}],
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
    if errors:
        metrics = [{"Name": name, "Unit": "Count"} for name in errors]
        directives.append({"Namespace": NAMESPACE, "Dimensions": [[]], "Metrics": metrics})
    return {
        "_aws": {"Timestamp": timestamp_ms, "CloudWatchMetrics": directives},
        OPERATION: labels.operation,
        TENANT: labels.tenant,
        "Latency": round(outcome.duration_seconds * 1000, 3),
        "Requests": 1,
        "DynamoDBCalls": outcome.dynamodb_calls,
        "ReadCapacityUnits": outcome.read_units,
        "WriteCapacityUnits": outcome.write_units,
        **errors,
    }
