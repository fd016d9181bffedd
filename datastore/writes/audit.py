"""The audit trail: one event per successful write, in the tenant's month buckets.

Each event carries its expiry (``expiresAt``, the table's TTL attribute): when it happened
plus its organisation's retention (datastore/table/retention.py).

Events are written by ``datastore.writes.envelope`` in the transaction of the write they record, and
read here newest first: a page is filled from the current month's bucket backwards, one
Query per bucket, never reaching before the month the organisation was created in.

``events_after`` reads it the other way, oldest first from an event id on, strongly
consistent: what a live subscription missed (graphql_api/subscriptions/), every write of the
organisation committed before the call included, since each event is in its write's own
transaction.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from datastore.errors import Conflict, InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import AuditEvent
from datastore.table import retention, transact
from datastore.table.pagination import Page, PageRequest, StartKey, checked_page_size
from datastore.table.scoped import QueryResult, Table, start_key_of
from datastore.tenancy import keys
from datastore.values import items
from datastore.values.ids import OrgId, id_time, new_id_at
from datastore.values.items import Item
from datastore.writes.changes import Change


def event_for(
    change: Change, *, actor_id: str | None, at: datetime, retention_days: int, idempotency_key: str | None = None
) -> AuditEvent:
    """The event recording ``change``, made at ``at``, kept ``retention_days``."""
    return AuditEvent(
        org_id=change.org_id,
        event_id=new_id_at(at),
        occurred_at=at,
        actor_id=actor_id,
        action=change.action,
        entity_type=change.entity_type,
        entity_id=change.entity_id,
        changes=change.fields(),
        before_version=change.before_version,
        after_version=change.after_version,
        idempotency_key=idempotency_key,
        expires_at=retention.expiry(at, retention_days),
    )


def event_op(event: AuditEvent) -> transact.Op:
    def taken(_old: Item | None) -> Conflict:
        return Conflict("the audit event id is already taken")

    return transact.put_new(layout.AUDIT_EVENT.item(event), taken)


@dataclass(frozen=True, slots=True)
class BucketQuery:
    """One Query of the walk: a month's bucket, newest first, from ``start``."""

    partition_key: str
    limit: int
    start: StartKey | None

    def params(self) -> dict[str, Any]:
        """Keyword arguments of either Table's ``query``."""
        return {
            "partition_key": self.partition_key,
            "sk_prefix": layout.AUDIT_EVENT.sort_prefix,
            "descending": True,
            "limit": self.limit,
            "start_key": self.start,
        }


# Each Query the walk asks for is answered by the caller, with either Table (sync or async).
AuditWalk = Generator[BucketQuery, QueryResult, Page[AuditEvent]]


def audit_walk(org_id: OrgId, request: PageRequest, *, now: datetime | None = None) -> AuditWalk:
    """The Queries that fill a page of the audit trail, newest first (``request.descending`` is
    ignored), and the page: the caller sends each Query's result back into the walk.

    ``now`` fixes the current month (tests); each cursor is the key of its event, whose
    partition names the bucket to resume in.
    """
    checked_page_size(request.first)
    first_bucket = keys.audit_bucket(id_time(org_id))
    bucket = keys.audit_bucket(now or items.now())
    start: StartKey | None = None
    if request.after is not None:
        bucket = _bucket_of_cursor(request.after, org_id)
        start = request.after
    found: list[Item] = []
    has_next = False
    while True:
        result = yield BucketQuery(layout.AUDIT_EVENT.partition(org_id, bucket), request.first - len(found), start)
        found.extend(result.items)
        if result.has_more:
            has_next = True
            break
        if bucket <= first_bucket:
            break
        bucket, start = keys.previous_audit_bucket(bucket), None
    return Page(
        [layout.AUDIT_EVENT.read(item) for item in found],
        [start_key_of(item) for item in found],
        has_next,
    )


async def list_audit_events(table: Table, request: PageRequest, *, now: datetime | None = None) -> Page[AuditEvent]:
    """The organisation's audit trail, newest first: ``audit_walk``'s Queries on ``table``."""
    walk = audit_walk(table.tenant.org_id, request, now=now)
    try:
        asked = next(walk)
        while True:
            asked = walk.send(await table.query(**asked.params()))
    except StopIteration as done:
        page: Page[AuditEvent] = done.value
        return page


def _bucket_of_cursor(after: StartKey, org_id: str) -> str:
    bucket = keys.audit_bucket_of(after.get(keys.PK, ""), org_id)
    if bucket is None:
        raise InvalidInput("after", "the cursor does not belong to this list")
    return bucket


async def events_after(
    table: Table, after: str, *, limit: int, now: datetime | None = None
) -> tuple[list[AuditEvent], str | None]:
    """Up to ``limit`` of the organisation's events with ids above ``after``, oldest first, and
    the id to go on after when there may be more (None: none are left).

    ``after`` is an event's id or a bound spelt like one (``ids.id_ceiling``). One strongly
    consistent Query per month bucket from ``after``'s month to ``now``'s; none before the
    month the organisation was created in.
    """
    org_id = table.tenant.org_id
    after_time = id_time(after)
    first_bucket = keys.audit_bucket(max(after_time, id_time(org_id)))
    last_bucket = keys.audit_bucket(now or items.now())
    bucket = first_bucket
    start: StartKey | None = {
        keys.PK: layout.AUDIT_EVENT.partition(org_id, bucket),
        keys.SK: layout.AUDIT_EVENT.sort_prefix + after,
    }
    found: list[AuditEvent] = []
    while True:
        result = await table.query(
            layout.AUDIT_EVENT.partition(org_id, bucket),
            sk_prefix=layout.AUDIT_EVENT.sort_prefix,
            limit=limit - len(found),
            start_key=start,
            consistent=True,
        )
        found += [layout.AUDIT_EVENT.read(item) for item in result.items]
        if result.has_more:
            return found, found[-1].event_id
        if len(found) >= limit:
            return found, None if bucket >= last_bucket else found[-1].event_id
        if bucket >= last_bucket:
            return found, None
        bucket, start = keys.next_audit_bucket(bucket), None
