"""The write envelope: one mutation's datastore side, the one path every write takes.

A write is one unit of work. ``run`` gives it its idempotency (datastore/writes/idempotency.py):
a retry under the same key replays the first attempt's result, and a first attempt runs the
entity's function once, handing it a ``Write``. Through the Write the function reads its
entity under the optimistic lock (``current``, ``on_current``: datastore/writes/locking.py)
and commits its operations with the Change they make (``commit``).

``commit`` is the one place a Change becomes an audit event, so no write can skip the trail:
the event (stamped with its expiry, the organisation's retention as the Table knows it,
datastore/table/retention.py) and the idempotency record go first in the transaction and the
entity's own operations after, which keeps the failure of any of them (the last included) a
failure of the whole. Writes that take no key and read nothing under a lock (an API key's
creation, a lifecycle step) call ``commit`` alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from datastore.errors import StaleVersion
from datastore.kinds.entities import AuditEvent
from datastore.kinds.model import Layout
from datastore.table import by_id, transact
from datastore.table.scoped import Table
from datastore.tenancy.scope import actor_of
from datastore.values import items
from datastore.values.items import Item
from datastore.writes import audit, idempotency, locking
from datastore.writes.changes import Change
from datastore.writes.idempotency import IdempotencyRequest

T = TypeVar("T")
V = TypeVar("V", bound=locking.Versioned)


@dataclass(frozen=True, slots=True)
class Write:
    """One write, as the entity's function sees it: its Table, its reads under the lock, and
    its commit (which carries the idempotency record, when the write is keyed)."""

    table: Table
    idempotency: IdempotencyRequest | None = None

    async def current(self, kind: Layout[V], entity_id: str, expected_version: int | None) -> V:
        """The entity as it is now (one strongly consistent GetItem), refused if it is missing
        or not at the version the caller expected."""
        found: V | None = await by_id.get(self.table, kind, entity_id, consistent=True)
        return locking.checked(kind, found, entity_id, expected_version)

    async def on_current(
        self,
        kind: Layout[V],
        entity_id: str,
        expected_version: int | None,
        step: Callable[[Write, V], Awaitable[T]],
        *,
        unversioned_attempts: int = 1,
    ) -> T:
        """``step`` of this write applied to the entity as it is now.

        With ``expected_version`` the caller asked for that version: a stale one is
        StaleVersion at once. Without, a write another request landed between the read and
        this one is no conflict of the caller's: read again and retry, at most
        ``unversioned_attempts`` times.
        """
        attempts = 1 if expected_version is not None else unversioned_attempts
        for attempt in range(1, attempts + 1):
            try:
                return await step(self, await self.current(kind, entity_id, expected_version))
            except StaleVersion:
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    async def commit(self, ops: Sequence[transact.Op], change: Change) -> None:
        """``ops`` and what they change: ``commit``, with this write's idempotency record."""
        await commit(self.table, ops, change, self.idempotency)


async def run(
    table: Table,
    operation: str,
    idempotency_key: str | None,
    inputs: Mapping[str, Any],
    decode: Callable[[Item], T],
    perform: Callable[[Write], Awaitable[T]],
) -> T:
    """``perform``, a write of ``table``'s tenant, once per idempotency key (every time when
    there is none); a retry gets the first attempt's result, decoded.

    ``inputs`` are the request as its fingerprint hashes it (``idempotency.prepare``).
    """
    tenant = table.tenant
    request = idempotency.prepare(tenant.org_id, tenant.actor_id, operation, idempotency_key, inputs)
    write = Write(table, request)
    return await idempotency.run(table, request, decode, lambda: perform(write))


async def commit(
    table: Table,
    ops: Sequence[transact.Op],
    change: Change,
    request: IdempotencyRequest | None = None,
    *,
    with_event: Callable[[AuditEvent], Sequence[transact.Op]] | None = None,
) -> None:
    """``ops`` with the Change's audit event (and the idempotency record) in one transaction.

    ``with_event``: operations made from the event, in the same transaction (a copy of it
    kept where a restore cannot replace it, datastore/lifecycle/trail.py)."""
    at = items.now()
    key = None if request is None else request.key
    days = await table.retention.days_for(table, change.org_id)
    event = audit.event_for(change, actor_id=actor_of(table.scope), at=at, retention_days=days, idempotency_key=key)
    bookkeeping = [audit.event_op(event)]
    if request is not None:
        bookkeeping.insert(0, idempotency.record_op(request, change.snapshot, at))
    if with_event is not None:
        bookkeeping += with_event(event)
    await table.write([*bookkeeping, *ops], token=None if request is None else request.token)
    if request is not None:
        request.attempt.recorded = True
