"""Live updates on AWS: API Gateway WebSocket connections and their subscriptions, as items.

API Gateway holds the sockets; the Lambda functions that answer them (graphql_api/
subscriptions/gateway.py) keep no state between invocations, so what a connection is and what
it listens to lives here:

- ``GatewayConnection`` ``ORG#<org>#LIVE / CONN#<connectionId>``: the verified caller (never
  the credential) and where to post to them, written once the caller is authenticated;
- ``GatewaySubscription`` ``ORG#<org>#LIVE / SUB#<connectionId>#<operationId>``: one
  subscription's document, variables and root field, and for a sign-in session its topic and
  the cursor it got to (``note_cursor``; absent on items written before, which resume nothing);
- ``GatewayLookup`` ``WSCONN#<connectionId> / #WSCONN``: the connection's organisation, since
  API Gateway names a connection by its id alone (``$default``, ``$disconnect``).

A connection and its subscriptions share their organisation's live partition, so the stream's
fan-out reads every subscriber of one organisation with one Query of one partition, and never
another organisation's. Every item carries the table's TTL (``expiresAt``): API Gateway ends a
connection after two hours at most, and ``$disconnect`` is not guaranteed, so nothing outlives
its connection for long.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from datastore.errors import DatastoreError
from datastore.kinds import layout
from datastore.kinds.bookkeeping import GatewayConnection, GatewayLookup, GatewaySubscription
from datastore.table import transact, updates
from datastore.table.scoped import Table
from datastore.tenancy.keys import Key
from datastore.values import items
from datastore.values.ids import OrgId
from datastore.values.items import Item

# A transaction holds at most 100 actions.
_TRANSACTION_ACTIONS: Final = 100
# Items of one organisation's live partition read per fan-out at most: connections and their
# subscriptions (the API's connection and subscription limits keep it far below).
LIVE_ITEMS_MAX: Final = 10_000


class DuplicateOperation(DatastoreError):
    """The connection already has a subscription with this operation id."""


class ConnectionGone(DatastoreError):
    """The connection is not recorded (never authenticated, or closed meanwhile)."""


@dataclass(frozen=True, slots=True)
class LiveItems:
    """One organisation's live partition: its connections by id, and their subscriptions."""

    connections: dict[str, GatewayConnection]
    subscriptions: list[GatewaySubscription]
    truncated: bool = False


async def open_connection(table: Table, connection: GatewayConnection) -> None:
    """Record an authenticated connection and its lookup item, in one transaction (``table``
    has the connection's TenantScope). Opening it again replaces both (a second
    ``connection_init`` is refused before this)."""
    lookup = GatewayLookup(connection.connection_id, connection.org_id, connection.expires_at)
    await table.write(
        [transact.put(layout.GATEWAY_CONNECTION.item(connection)), transact.put(layout.GATEWAY_LOOKUP.item(lookup))]
    )


async def org_of(table: Table, connection_id: str) -> OrgId | None:
    """The organisation of an authenticated connection (``table`` has the GatewayScope); None for
    a connection not (or no longer) recorded. One strongly consistent GetItem. An expired one is
    still found (the TTL deletes within days): the caller says why it is over."""
    item = await table.get(layout.GATEWAY_LOOKUP.key_at(connection_id), consistent=True)
    if item is None:
        return None
    lookup: GatewayLookup = layout.GATEWAY_LOOKUP.read(item)
    return lookup.org_id


async def get_connection(table: Table, connection_id: str) -> GatewayConnection | None:
    """The connection as recorded, expired or not (one strongly consistent GetItem)."""
    item = await table.get(layout.GATEWAY_CONNECTION.key_at(table.tenant.org_id, connection_id), consistent=True)
    return None if item is None else layout.GATEWAY_CONNECTION.read(item)


async def subscriptions_of(table: Table, connection_id: str, *, limit: int) -> list[GatewaySubscription]:
    org_id = table.tenant.org_id
    found = await table.query(
        layout.GATEWAY_SUBSCRIPTION.partition(org_id),
        sk_prefix=f"SUB#{connection_id}#",
        limit=limit,
        consistent=True,
    )
    return [layout.GATEWAY_SUBSCRIPTION.read(item) for item in found.items]


async def subscribe(table: Table, subscription: GatewaySubscription) -> None:
    """Record a subscription, on the conditions that its connection is recorded and that the
    operation id is new on it (DuplicateOperation)."""
    org_id = table.tenant.org_id

    def duplicate(_old: Item | None) -> DatastoreError:
        return DuplicateOperation(subscription.operation_id)

    def gone(_old: Item | None) -> DatastoreError:
        return ConnectionGone(subscription.connection_id)

    await table.write(
        [
            transact.check(
                layout.GATEWAY_CONNECTION.key_at(org_id, subscription.connection_id),
                "attribute_exists(PK)",
                on_failed=gone,
            ),
            transact.put_new(layout.GATEWAY_SUBSCRIPTION.item(subscription), duplicate),
        ]
    )


async def unsubscribe(table: Table, connection_id: str, operation_id: str) -> None:
    org_id = table.tenant.org_id
    await table.write([transact.delete(layout.GATEWAY_SUBSCRIPTION.key_at(org_id, connection_id, operation_id))])


async def extend_token(table: Table, connection_id: str, until: datetime) -> bool:
    """Move when the connection's credential is next checked to ``until`` (its sign-in session
    is signed in until then); False when the connection is not recorded (closed meanwhile).
    One conditional UpdateItem: a closed connection is not written back."""
    key = layout.GATEWAY_CONNECTION.key_at(table.tenant.org_id, connection_id)

    def gone(_old: Item | None) -> DatastoreError:
        return ConnectionGone(connection_id)

    op = transact.update(
        key,
        [updates.Set("tokenExpiresAt", items.s(items.timestamp(until)))],
        condition="attribute_exists(PK)",
        on_failed=gone,
    )
    try:
        await table.write([op])
    except ConnectionGone:
        return False
    return True


async def note_cursor(table: Table, connection_id: str, operation_id: str, topic: str, cursor: str) -> bool:
    """Keep where a subscription got to (its topic, the cursor of its last event posted), for a
    resume when its connection ends; False when it is not recorded (completed or closed
    meanwhile). One conditional UpdateItem."""
    key = layout.GATEWAY_SUBSCRIPTION.key_at(table.tenant.org_id, connection_id, operation_id)

    def gone(_old: Item | None) -> DatastoreError:
        return ConnectionGone(connection_id)

    op = transact.update(
        key,
        [updates.Set("topic", items.s(topic)), updates.Set("cursor", items.s(cursor))],
        condition="attribute_exists(PK)",
        on_failed=gone,
    )
    try:
        await table.write([op])
    except ConnectionGone:
        return False
    return True


async def close_connection(
    table: Table, connection_id: str, subscriptions: list[GatewaySubscription] | None = None
) -> int:
    """Delete a connection, its subscriptions and its lookup item; the number of items deleted.

    ``subscriptions`` are the connection's when the caller has them already (the fan-out read
    its organisation's partition); else they are read (one Query)."""
    org_id = table.tenant.org_id
    if subscriptions is None:
        subscriptions = await subscriptions_of(table, connection_id, limit=LIVE_ITEMS_MAX)
    doomed: list[Key] = [
        layout.GATEWAY_SUBSCRIPTION.key_at(org_id, connection_id, subscription.operation_id)
        for subscription in subscriptions
    ]
    doomed += [layout.GATEWAY_CONNECTION.key_at(org_id, connection_id), layout.GATEWAY_LOOKUP.key_at(connection_id)]
    for start in range(0, len(doomed), _TRANSACTION_ACTIONS):
        await table.write([transact.delete(key) for key in doomed[start : start + _TRANSACTION_ACTIONS]])
    return len(doomed)


async def live_items(table: Table) -> LiveItems:
    """Every connection and subscription of the table's organisation: one Query (of as many 1 MB
    pages as it takes) of its live partition. Expired ones too (the TTL deletes them within
    days): the fan-out closes them, saying why, at their next event."""
    org_id = table.tenant.org_id
    found = await table.query(layout.GATEWAY_CONNECTION.partition(org_id), limit=LIVE_ITEMS_MAX, consistent=True)
    connections: dict[str, GatewayConnection] = {}
    subscriptions: list[GatewaySubscription] = []
    for item in found.items:
        tag = item.get("entity", {}).get("S")
        if tag == layout.GATEWAY_CONNECTION.tag:
            connection: GatewayConnection = layout.GATEWAY_CONNECTION.read(item)
            connections[connection.connection_id] = connection
        elif tag == layout.GATEWAY_SUBSCRIPTION.tag:
            subscriptions.append(layout.GATEWAY_SUBSCRIPTION.read(item))
    live = [subscription for subscription in subscriptions if subscription.connection_id in connections]
    return LiveItems(connections, live, found.has_more)
