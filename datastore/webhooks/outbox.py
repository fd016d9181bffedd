"""The outbox: one delivery item per audit event owed to an endpoint, written before any attempt.

``enqueue`` reads the organisation's audit trail after a given event id (strongly
consistent, ``audit.events_after``) and puts a delivery for each event an enabled endpoint
subscribes to, unless it is there already: the key is the endpoint and the event
(``WHDLV#<endpoint>#<event>``), so enqueueing an event twice (a sweep reading back over a
window, a new lease holder going over what the last one did) writes it once. A delivery is
never made for an event older than its endpoint.

The organisation's cursor item records the newest event enqueued. A write's audit id is
minted just before its transaction commits, so an event may become readable after a later
one was; whoever enqueues therefore reads back from a little before the cursor now and then
(the dispatcher's sweep, graphql_api/webhooks/dispatcher.py) and finds those too.

A pending delivery is also in the endpoint's sparse index partition (``ORG#<org>#WHDUE#<endpoint>``),
oldest event first: ``pending`` reads it. Each attempt's result is written on the condition
that the delivery's attempt count is still the one the attempt began with, so two
dispatchers (one taking over from a hung one) never record one attempt twice.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final

from datastore.errors import Conflict, NotFound
from datastore.kinds import layout
from datastore.kinds.entities import AuditEvent
from datastore.kinds.webhook_entities import DeliveryStatus, WebhookCursor, WebhookDelivery, WebhookEndpoint
from datastore.table import transact
from datastore.table.pagination import Page, PageQuery, PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import WebhooksScope as WebhooksScope  # the scope organisations_with_endpoints reads in
from datastore.values import items
from datastore.values.ids import OrgId, id_ceiling, id_milliseconds, id_time
from datastore.values.items import Item
from datastore.webhooks.endpoints import matches
from datastore.writes import audit

# How long a delivery item is kept after it was made (TTL): its record for the admins'
# ``deliveries`` list and for ``redeliverWebhook``.
KEEP_FOR: Final = timedelta(days=30)
# Audit events read per Query while enqueueing.
READ_BATCH: Final = 100
# The longest an error kept with a delivery may be (the answer's body excerpt included).
ERROR_MAX: Final = 1024


@dataclass(frozen=True, slots=True)
class Enqueued:
    """What one ``enqueue`` did: the deliveries it wrote, and the id to read on after."""

    written: list[WebhookDelivery]
    last_event_id: str | None
    # Events read (whether or not any endpoint wanted them).
    read: int


async def organisations_with_endpoints(table: Table, *, limit: int = 10_000) -> list[OrgId]:
    """Every organisation that has an endpoint (``table`` has the WebhooksScope): one Query of the index."""
    result = await table.query(layout.WEBHOOKS_PK, index=keys.GSI1, limit=limit)
    return list(dict.fromkeys(OrgId(item[layout.ORG_ID]["S"]) for item in result.items))


async def cursor(table: Table) -> str | None:
    found = await table.get(layout.WEBHOOK_CURSOR.key_at(table.tenant.org_id), consistent=True)
    return None if found is None else layout.WEBHOOK_CURSOR.read(found).event_id


async def save_cursor(table: Table, event_id: str) -> None:
    """Move the cursor forward to ``event_id`` (never back: a slower writer's older id loses)."""
    item = layout.WEBHOOK_CURSOR.item(WebhookCursor(table.tenant.org_id, event_id))
    op = transact.put(
        item,
        condition="attribute_not_exists(PK) OR eventId < :event",
        values={":event": items.s(event_id)},
    )
    with contextlib.suppress(Conflict):
        await table.write([op])


def start_after(endpoints: list[WebhookEndpoint], saved: str | None, *, back: timedelta) -> str | None:
    """Where to read the trail from: ``back`` before the saved cursor, never before the oldest
    enabled endpoint; None when no endpoint is enabled."""
    live = [endpoint for endpoint in endpoints if endpoint.enabled]
    if not live:
        return None
    floor = min(endpoint.created_at for endpoint in live)
    start = floor if saved is None else max(floor, id_time(saved) - back)
    return id_ceiling(int(start.timestamp() * 1000) - 1)


def delivery_for(endpoint: WebhookEndpoint, event: AuditEvent, *, now: datetime) -> WebhookDelivery:
    return WebhookDelivery(
        org_id=endpoint.org_id,
        endpoint_id=endpoint.endpoint_id,
        event_id=event.event_id,
        event_type=event.action,
        entity_type=event.entity_type,
        entity_id=event.entity_id,
        entity_version=event.after_version,
        occurred_at=event.occurred_at,
        status=DeliveryStatus.PENDING,
        attempts=0,
        created_at=now,
        expires_at=now + KEEP_FOR,
        next_attempt_at=now,
    )


async def enqueue(
    table: Table, endpoints: list[WebhookEndpoint], after: str, *, limit: int = 1000, now: datetime | None = None
) -> Enqueued:
    """Deliveries for the events after ``after`` (up to ``limit`` events), each written once."""
    at = now or items.now()
    live = [endpoint for endpoint in endpoints if endpoint.enabled]
    written: list[WebhookDelivery] = []
    last: str | None = None
    read = 0
    position: str | None = after
    while position is not None and read < limit:
        events, position = await audit.events_after(table, position, limit=min(READ_BATCH, limit - read), now=at)
        read += len(events)
        wanted = [
            delivery_for(endpoint, event, now=at)
            for event in events
            for endpoint in live
            if event.occurred_at >= endpoint.created_at and matches(endpoint, event.action)
        ]
        if events:
            last = events[-1].event_id
        if wanted:
            found = await table.batch_get([layout.WEBHOOK_DELIVERY.key_of(delivery) for delivery in wanted])
            for delivery, existing in zip(wanted, found, strict=True):
                if existing is not None:
                    continue
                try:
                    await table.write([transact.put_new(layout.WEBHOOK_DELIVERY.item(delivery), _taken)])
                except Conflict:
                    continue
                written.append(delivery)
        if not events:
            break
    return Enqueued(written, last, read)


def _taken(_old: Item | None) -> Conflict:
    return Conflict("the delivery is already recorded")


async def pending(table: Table, endpoint_id: str, *, limit: int) -> list[WebhookDelivery]:
    """The endpoint's pending deliveries, oldest event first (its sparse index; eventually consistent)."""
    org_id = table.tenant.org_id
    result = await table.query(
        layout.WEBHOOK_DELIVERY.index_partition(org_id=org_id, endpoint_id=endpoint_id), index=keys.GSI1, limit=limit
    )
    return [layout.WEBHOOK_DELIVERY.read(item) for item in result.items]


async def get_delivery(table: Table, endpoint_id: str, event_id: str) -> WebhookDelivery:
    found = await table.get(layout.WEBHOOK_DELIVERY.key_at(table.tenant.org_id, endpoint_id, event_id), consistent=True)
    if found is None:
        raise NotFound(WebhookDelivery, f"{endpoint_id}.{event_id}")
    return layout.WEBHOOK_DELIVERY.read(found)


def deliveries_of(org_id: OrgId, endpoint_id: str) -> PageQuery[WebhookDelivery]:
    """An endpoint's deliveries by event id (ask for them descending: newest first)."""
    return PageQuery(
        layout.WEBHOOK_DELIVERY.partition(org_id),
        layout.WEBHOOK_DELIVERY.read,
        sk_prefix=f"{layout.WEBHOOK_DELIVERY.sort_prefix}{endpoint_id}#",
    )


async def list_deliveries(table: Table, endpoint_id: str, request: PageRequest) -> Page[WebhookDelivery]:
    return await table.page(deliveries_of(table.tenant.org_id, endpoint_id), request)


async def record(table: Table, before: WebhookDelivery, after: WebhookDelivery) -> bool:
    """Write an attempt's outcome ``after`` over ``before``, unless another attempt was recorded
    meanwhile (the attempt count moved) or the delivery is gone; True when written."""
    error = None if after.last_error is None else after.last_error[:ERROR_MAX]
    op = transact.put(
        layout.WEBHOOK_DELIVERY.item(replace(after, last_error=error)),
        condition="attempts = :attempts AND #status = :status",
        names={"#status": layout.STATUS},
        values={":attempts": items.n(before.attempts), ":status": items.s(before.status.value)},
    )
    try:
        await table.write([op])
    except Conflict:
        return False
    return True


async def redeliver(table: Table, endpoint_id: str, event_id: str, *, now: datetime | None = None) -> WebhookDelivery:
    """Make a delivery pending again, due now, with the same event id (receivers deduplicate by it).

    Its attempts go on counting; its expiry starts again. Conflict when it is pending already."""
    found = await get_delivery(table, endpoint_id, event_id)
    if found.pending:
        raise Conflict("the delivery is pending already: it will be attempted")
    at = now or items.now()
    again = replace(found, status=DeliveryStatus.PENDING, next_attempt_at=at, expires_at=at + KEEP_FOR)
    if not await record(table, found, again):
        raise Conflict("the delivery changed meanwhile: read it again")
    return again


def event_ms(delivery: WebhookDelivery) -> int:
    """When the delivery's event was written (its id's time), in epoch milliseconds."""
    return id_milliseconds(delivery.event_id)
