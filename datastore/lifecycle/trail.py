"""The lifecycle's audit events: in the organisation's trail, and kept where a restore cannot
replace them.

Closing an organisation (``organization.close``), exporting it (``organization.export``),
restoring it (``organization.restore``) and erasing a person (``employee.erase``) each write an
audit event in the organisation's trail, and in the same transaction a copy of it
(``LifecycleEvent``, ``ORG#<org>#LIFECYCLE`` / ``EVT#<event>``): a partition no walk family
names, so no export carries it, no restore replaces it and no offboarding deletes it (the
events hold ids, times and counts, no personal value; each copy expires with its event, TTL).
A restore replaces the trail with its source's, which was taken before these events (or
before an offboarding deleted the trail): it leaves the live trail's lifecycle events where
they are and ends by putting back each kept copy the trail lacks (``put_back``), so the
restored trail says the organisation was closed, exported and restored, and by whom.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from datastore.errors import Conflict
from datastore.kinds import layout
from datastore.kinds.entities import AuditEvent
from datastore.kinds.model import ENTITY
from datastore.table import transact
from datastore.table.scoped import Table
from datastore.values.ids import OrgId
from datastore.values.items import Item
from datastore.writes import envelope
from datastore.writes.changes import Change

RESTORE_ACTION: Final = "organization.restore"
# The actions whose events a restore keeps and puts back.
ACTIONS: Final = frozenset({"organization.close", "organization.export", RESTORE_ACTION, "employee.erase"})
_PAGE: Final = 1000


async def commit(table: Table, ops: Sequence[transact.Op], change: Change) -> None:
    """``envelope.commit`` of a lifecycle change: its event, and the event's kept copy."""
    assert change.action in ACTIONS, change.action
    await envelope.commit(
        table, ops, change, with_event=lambda event: [transact.put(layout.LIFECYCLE_EVENT.item(event))]
    )


def is_lifecycle_event(item: Item) -> bool:
    """An audit event item of the lifecycle (one a restore leaves in the live trail)."""
    return item.get(ENTITY, {}).get("S") == layout.AUDIT_EVENT.tag and item.get("action", {}).get("S") in ACTIONS


async def kept(table: Table, org_id: OrgId) -> list[AuditEvent]:
    """Every kept copy of the organisation's lifecycle events, oldest first."""
    found: list[AuditEvent] = []
    start = None
    while True:
        partition = layout.LIFECYCLE_EVENT.partition(org_id)
        result = await table.query(partition, limit=_PAGE, start_key=start, consistent=True)
        found += [layout.LIFECYCLE_EVENT.read(item) for item in result.items]
        if not result.has_more:
            return found
        start = Table.start_key_of(result.items[-1])


async def put_back(table: Table, org_id: OrgId) -> int:
    """Each kept event the trail lacks, put back as it was written: how many."""
    restored = 0
    for event in await kept(table, org_id):
        key = layout.AUDIT_EVENT.key_of(event)
        if await table.get(key, consistent=True) is not None:
            continue
        try:
            await table.write([transact.put(layout.AUDIT_EVENT.item(event), condition="attribute_not_exists(PK)")])
        except Conflict:
            continue  # put back meanwhile
        restored += 1
    return restored
