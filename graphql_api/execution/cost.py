"""``extensions.cost``: what a response cost: its query cost against the limit, its charge to the
organisation's bucket and what the bucket holds after it, and its DynamoDB calls, capacity
and server time.

Read once, when the result is built, from what the limits left on the operation's record
(execution/operation.py: the analysis MaxCost made, the charge TenantRate took) and from the
request's CallLog: no per-field hooks, so the extension adds nothing to resolver time. Switched off
with COST_IN_RESPONSE=false.

    queryCost        the document's cost (execution/query_cost.py); absent if it was never
                     counted (it did not validate) or was shown past the limit
    maxQueryCost     MAX_QUERY_COST: a document costing more is refused
    charge           units taken from the organisation's bucket: queryCost, plus 1,000 per
                     mutation field (limits/tenant_rate.py); absent when nothing was charged
    bucket           the organisation's bucket after the charge: ``remaining`` units,
                     ``capacity`` (TENANT_COST_BURST) and ``refillPerSecond``
                     (TENANT_COST_PER_SECOND); absent for callers who draw on none
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from strawberry.extensions import SchemaExtension

from datastore.aws.calls import CallLog
from graphql_api.execution.operation import operation_of


def cost_of(log: CallLog, started: float) -> dict[str, Any]:
    """The cost summary of the calls in ``log`` since ``started`` (a perf_counter time)."""
    recorded = log.snapshot()
    by_operation = Counter(call.operation for call in recorded)
    return {
        "requests": dict(sorted(by_operation.items())),
        "requestCount": len(recorded),
        "waves": len(log.waves()),
        "readCapacityUnits": round(sum(call.read_units for call in recorded), 2),
        "writeCapacityUnits": round(sum(call.write_units for call in recorded), 2),
        "itemsRead": sum(call.items for call in recorded),
        "serverTimeMs": round((time.perf_counter() - started) * 1000, 2),
    }


class Cost(SchemaExtension):
    """Adds ``cost`` to every response's extensions (see the module's docstring)."""

    def __init__(self, max_cost: int) -> None:
        self.max_cost = max_cost

    def get_results(self) -> dict[str, Any]:
        execution = self.execution_context
        session = getattr(execution.context, "session", None)
        log = getattr(session, "call_log", None)
        started = getattr(session, "started", None)
        if not isinstance(log, CallLog) or not isinstance(started, float):
            return {}
        figures: dict[str, Any] = {}
        run = operation_of(execution)
        if run is not None and run.analysis is not None:
            figures["queryCost"] = run.analysis.cost
        figures["maxQueryCost"] = self.max_cost
        charge = None if run is None else run.charge
        if charge is not None and charge.bucket is not None:
            figures["charge"] = round(charge.units)
            figures["bucket"] = charge.bucket.extension()
        return {"cost": {**figures, **cost_of(log, started)}}
