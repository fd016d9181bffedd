"""The write path of every change: its operations, its audit event and its idempotency record.

``commit`` is the one place a Change becomes an audit event, so no write can skip the trail:
the event (stamped with its expiry, the organisation's retention as the Table knows it,
datastore/table/retention.py) and the record go first in the transaction and the entity's own operations after,
which keeps the failure of any of them (the last included) a failure of the whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from datastore.kinds.entities import AuditEvent
from datastore.table import transact
from datastore.table.scoped import Table
from datastore.tenancy.scope import actor_of
from datastore.values import items
from datastore.writes import audit
from datastore.writes.changes import Change
from datastore.writes.idempotency import IdempotencyRequest, record_op


async def commit(
    table: Table,
    ops: Sequence[transact.Op],
    change: Change,
    idempotency: IdempotencyRequest | None = None,
    *,
    with_event: Callable[[AuditEvent], Sequence[transact.Op]] | None = None,
) -> None:
    """``with_event``: operations made from the event, in the same transaction (a copy of it
    kept where a restore cannot replace it, datastore/lifecycle/trail.py)."""
    at = items.now()
    key = None if idempotency is None else idempotency.key
    days = await table.retention.days_for(table, change.org_id)
    event = audit.event_for(change, actor_id=actor_of(table.scope), at=at, retention_days=days, idempotency_key=key)
    bookkeeping = [audit.event_op(event)]
    if idempotency is not None:
        bookkeeping.insert(0, record_op(idempotency, change.snapshot, at))
    if with_event is not None:
        bookkeeping += with_event(event)
    await table.write([*bookkeeping, *ops], token=None if idempotency is None else idempotency.token)
    if idempotency is not None:
        idempotency.attempt.recorded = True
