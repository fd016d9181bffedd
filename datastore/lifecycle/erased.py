"""Erasure records: that a person was erased, kept where no restore can overwrite them.

An erasure (datastore/lifecycle/erasure.py) writes, in its last transaction, a record in
the organisation's erasures partition (``ORG#<org>#ERASED`` / ``EMP#<emp>``) holding the
employee's tombstone. No walk family names that partition: an export never carries it, a
restore never replaces it (from a file, another table, interrupted, run again) and an
offboarding keeps it (it holds no personal value). A restore reads the records before it
writes anything and applies them to every item it writes (``Erasures.apply``): the person's
item is their tombstone, their copies and pointers (memberships, name entries, the email
pointer, the identity) are not written, audit events about them lose their personal values,
and idempotency records of writes about them are not written. So what a restore writes is
erased whatever the source holds and however often the restore is started.

A tombstone written before erasure records existed has none: a restore records one for each
tombstone the live table holds (``record_missing``) before its first write of the
organisation's data, so an erasure of an earlier release holds too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from datastore.kinds import layout
from datastore.kinds.bookkeeping import ErasureRecord
from datastore.kinds.entities import AuditEvent, Employee, FieldChange
from datastore.kinds.model import ENTITY
from datastore.lifecycle import kinds
from datastore.table import transact
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values.ids import OrgId
from datastore.values.items import Item

# Items a Query of the erasures partition asks for at once.
_PAGE = 1000
# The kinds that copy or point at a person, found by the employee id they hold: never written.
_COPIES = frozenset({layout.MEMBERSHIP.tag, layout.NAME_ENTRY.tag, layout.EMAIL_POINTER.tag, layout.IDENTITY.tag})


def partition(org_id: str) -> str:
    return layout.ERASURE_RECORD.partition(org_id)


def record_op(tombstone: Employee) -> transact.Op:
    """The put of ``tombstone``'s erasure record (an erasure's last transaction carries it)."""
    assert tombstone.erased_at is not None
    record = ErasureRecord(tombstone.org_id, tombstone.emp_id, tombstone.erased_at, layout.EMPLOYEE.item(tombstone))
    return transact.put(layout.ERASURE_RECORD.item(record))


async def recorded(table: Table, org_id: OrgId) -> dict[str, ErasureRecord]:
    """Every erasure record of the organisation, by employee id (strongly consistent)."""
    found: dict[str, ErasureRecord] = {}
    start = None
    while True:
        result = await table.query(partition(org_id), limit=_PAGE, start_key=start, consistent=True)
        for item in result.items:
            record = layout.ERASURE_RECORD.read(item)
            found[record.emp_id] = record
        if not result.has_more:
            return found
        start = Table.start_key_of(result.items[-1])


async def record_missing(
    table: Table, tombstones: Iterable[Item], known: Mapping[str, ErasureRecord]
) -> list[ErasureRecord]:
    """A record for each of ``tombstones`` (employee items with ``erasedAt``) that has none
    in ``known``: an erasure made before records existed. The records written."""
    written = []
    for item in tombstones:
        employee = layout.EMPLOYEE.read(item)
        if employee.erased_at is None or employee.emp_id in known:
            continue
        record = ErasureRecord(employee.org_id, employee.emp_id, employee.erased_at, dict(item))
        await table.write([transact.put(layout.ERASURE_RECORD.item(record))])
        written.append(record)
    return written


def personal_changes(event: AuditEvent) -> bool:
    """Whether an event still holds a personal value in its changes."""
    return any(
        change.field in kinds.PERSONAL and (change.before, change.after) != (None, None) for change in event.changes
    )


def redacted(event: AuditEvent, at: datetime) -> AuditEvent:
    """The event with its personal values nulled and ``erasedAt``; what happened stays."""
    return replace(
        event,
        changes=tuple(
            FieldChange(change.field, None, None) if change.field in kinds.PERSONAL else change
            for change in event.changes
        ),
        erased_at=at,
    )


@dataclass
class Erasures:
    """The organisation's erasure records, applied to each item a restore writes."""

    records: Mapping[str, ErasureRecord]
    # Idempotency records named by audit events about an erased person (the audit family
    # comes before the idempotency family in walk order, in every source).
    _records_about: set[str] = field(default_factory=set)
    # People the source holds intact whose tombstone was written instead.
    kept_erased: set[str] = field(default_factory=set)

    def learn(self, records: Mapping[str, ErasureRecord]) -> None:
        """Adds the records written since these were read (an erasure that ran meanwhile)."""
        self.records = {**self.records, **records}

    def erased(self, emp_id: str | None) -> bool:
        return emp_id is not None and emp_id in self.records

    def apply(self, item: Item) -> Item | None:
        """What to write for the source's ``item``: itself, erased, or None (write nothing)."""
        tag = item.get(ENTITY, {}).get("S")
        emp_id = item.get(layout.EMP_ID, {}).get("S")
        if tag == layout.EMPLOYEE.tag and self.erased(emp_id):
            if layout.ERASED_AT in item:
                return item  # a tombstone in the source already
            assert emp_id is not None
            self.kept_erased.add(emp_id)
            return dict(self.records[emp_id].tombstone)
        if tag in _COPIES and self.erased(emp_id):
            return None
        if tag == layout.AUDIT_EVENT.tag:
            return self._event(item)
        if tag == layout.IDEMPOTENCY.tag and item[keys.PK]["S"] in self._records_about:
            return None
        return item

    def _event(self, item: Item) -> Item:
        subject = item["entityId"]["S"]
        if item["entityType"]["S"] != layout.EMPLOYEE.tag or not self.erased(subject):
            return item
        event = layout.AUDIT_EVENT.read(item)
        if event.idempotency_key is not None:
            self._records_about.add(layout.IDEMPOTENCY.partition(event.org_id, event.idempotency_key))
        if event.erased_at is not None or not personal_changes(event):
            return item
        return layout.AUDIT_EVENT.item(redacted(event, self.records[subject].erased_at))
