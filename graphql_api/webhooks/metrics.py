"""Webhook metrics: deliveries by outcome, attempts, lag and the dispatcher's failures, per organisation.

The ``tenant`` label admits METRICS_MAX_TENANTS organisations per process and counts the
rest as ``other`` (observability/labels.py), so no number of organisations grows a series
without bound.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

ATTEMPTS = Counter(
    "hr_webhook_attempts",
    "Webhook delivery attempts, by tenant and outcome (delivered, retry: will be tried again, failed: final)",
    ["tenant", "outcome"],
)
ENQUEUED = Counter("hr_webhook_deliveries_enqueued", "Deliveries recorded in the outbox, by tenant", ["tenant"])
LAG = Histogram(
    "hr_webhook_lag_seconds",
    "From an audit event's write to its delivery's first attempt, by tenant",
    ["tenant"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800),
)
DISABLED = Counter("hr_webhook_endpoints_disabled", "Endpoints disabled for failing too long, by tenant", ["tenant"])
ERRORS = Counter(
    "hr_webhook_dispatch_errors", "Rounds or attempts the dispatcher could not complete (DynamoDB failures)"
)
