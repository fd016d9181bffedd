"""``extensions.cost``: what a response cost in DynamoDB calls, capacity and server time.

Read from the request's CallLog once, when the result is built: no per-field hooks, so the
extension adds nothing to resolver time. Switched off with COST_IN_RESPONSE=false.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from strawberry.extensions import SchemaExtension

from datastore.calls import CallLog


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
    """Adds ``cost`` to every response's extensions (from the request session's CallLog)."""

    def get_results(self) -> dict[str, Any]:
        session = getattr(self.execution_context.context, "session", None)
        log = getattr(session, "call_log", None)
        started = getattr(session, "started", None)
        if not isinstance(log, CallLog) or not isinstance(started, float):
            return {}
        return {"cost": cost_of(log, started)}
