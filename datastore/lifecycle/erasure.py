"""Erasing a person: a terminated employee's personal data removed everywhere it is stored.

The personal values are the email and the names (kinds.PERSONAL), wherever a kind holds them
(kinds.py's ``personal``). Each kind the person touches is handled as its row says:

- the employee's item becomes a tombstone: email and names empty, ``erasedAt`` set; its id,
  role, department, status and dates stay (what the organisation's records need: who
  applied, who managed, who was employed when), so every reference to the person still
  resolves, to "an erased person";
- copies of the person and items pointing at them are deleted: name entries (so no search
  finds them), a membership copy (a terminated employee has none; one left by drift goes
  with its headcount), the email pointer and the platform-wide identity, so the email is
  free for anyone again;
- audit events about the person keep what happened (the action, who did it, which fields
  changed, every value that is not personal) and lose the personal values in their changes
  (each becomes null, the event gets ``erasedAt``);
- idempotency records of writes about the person are deleted (their results hold the
  person's item); audit events name the key each write ran under;
- applications and applicant guards hold ids and statuses only: kept, so a job's pipeline
  and its counters are unchanged, the applicant shown as the erased person;
- persisted GraphQL documents whose text holds the email or a name (an admin's saved
  query, say) are deleted: a cache, which a client refills by sending the text again.

Steps, each idempotent: the audit events are redacted and the idempotency records and
persisted documents deleted (transactions of at most 100 items), then one transaction tombstones the employee (on its
version), deletes the pointer, the identity and the name entries (and a membership with its
headcount), and writes the erasure's own audit event, which names the fields erased and no
value, and the person's erasure record (datastore/lifecycle/erased.py), which every restore
obeys. Interrupted, a run again finds the employee intact and finishes; a tombstone means
done. A write to the employee meanwhile fails the last transaction, which is tried again
from the start. The dry run reads the same and writes nothing: the items it would touch.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from datastore.errors import Conflict, NotFound, StaleVersion
from datastore.kinds import layout
from datastore.kinds.entities import AuditEvent, Employee, EmployeeStatus
from datastore.lifecycle import erased, kinds, trail, walk
from datastore.table import transact, updates
from datastore.table.scoped import TRANSACT_LIMIT, Table
from datastore.tenancy import keys
from datastore.values import items, names
from datastore.values.ids import EmployeeId, id_time
from datastore.values.items import Item
from datastore.writes.changes import Change

ACTION: Final = "employee.erase"
# Tries of the whole erasure when the employee is written meanwhile.
ATTEMPTS: Final = 3
# Items a Query of the audit trail asks for at once.
_PAGE: Final = 1000

Action = Literal["tombstone", "delete", "redact"]


@dataclass(frozen=True, slots=True)
class Touch:
    """One item an erasure writes: what it does to it."""

    action: Action
    kind: str
    key: keys.Key

    def describe(self) -> str:
        return f"{self.action:<9} {self.kind:<12} {self.key.pk} / {self.key.sk}"


@dataclass
class Erasure:
    """What erasing one person touches (or touched), item by item."""

    employee: Employee
    touches: list[Touch] = field(default_factory=list)
    # True when the employee was a tombstone already: nothing was left to do.
    already: bool = False

    def by_kind(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for touch in self.touches:
            found[touch.kind] = found.get(touch.kind, 0) + 1
        return found


@dataclass
class _Plan:
    employee: Employee
    events: list[AuditEvent]
    records: list[keys.Key]
    entries: list[keys.Key]
    membership: bool
    pointer: bool
    # Persisted documents whose text holds the person's email or a name.
    documents: list[keys.Key] = field(default_factory=list)


async def erase_person(table: Table, emp_id: EmployeeId, *, dry_run: bool = False) -> Erasure:
    """Erase a terminated employee of ``table``'s tenant (module docstring).

    NotFound when no employee has the id; Conflict while they are ACTIVE (terminate them
    first). With ``dry_run`` nothing is written: the result lists every item it would touch.
    """
    for attempt in range(ATTEMPTS):
        plan = await _plan(table, emp_id)
        if plan is None:
            employee = await _employee(table, emp_id)
            return Erasure(employee, already=True)
        erasure = Erasure(plan.employee, _touches(plan))
        if dry_run:
            return erasure
        await _redact(table, plan.events)
        await _drop(table, [*plan.records, *plan.documents])
        try:
            erasure.employee = await _tombstone(table, plan)
        except StaleVersion:
            if attempt + 1 == ATTEMPTS:
                raise
            continue
        return erasure
    raise AssertionError("unreachable")


# --- reading what is there ----------------------------------------------------------------------


async def _employee(table: Table, emp_id: EmployeeId) -> Employee:
    found = await table.get(layout.EMPLOYEE.key_at(table.tenant.org_id, emp_id), consistent=True)
    if found is None:
        raise NotFound(Employee, emp_id)
    return layout.EMPLOYEE.read(found)


async def _plan(table: Table, emp_id: EmployeeId) -> _Plan | None:
    """What erasing the employee touches; None when they are a tombstone already."""
    employee = await _employee(table, emp_id)
    if employee.erased_at is not None:
        return None
    if employee.status is not EmployeeStatus.INACTIVE:
        raise Conflict("only a terminated employee can be erased: terminate them first")
    org_id = employee.org_id
    events = [event async for event in _events_about(table, employee)]
    record_keys = sorted(
        {layout.IDEMPOTENCY.key_at(org_id, event.idempotency_key) for event in events if event.idempotency_key},
        key=lambda key: key.pk,
    )
    wanted = [*_entry_keys(employee), *record_keys, layout.EMAIL_POINTER.key_at(org_id, employee.email)]
    membership = layout.MEMBERSHIP.key_of(employee) if employee.department_id is not None else None
    if membership is not None:
        wanted.append(membership)
    found = {
        keys.Key(item[keys.PK]["S"], item[keys.SK]["S"]) for item in await table.batch_get(wanted) if item is not None
    }
    return _Plan(
        employee,
        [event for event in events if event.erased_at is None and erased.personal_changes(event)],
        [key for key in record_keys if key in found],
        [key for key in _entry_keys(employee) if key in found],
        membership is not None and membership in found,
        layout.EMAIL_POINTER.key_at(org_id, employee.email) in found,
        await _documents_naming(table, employee),
    )


async def _documents_naming(table: Table, employee: Employee) -> list[keys.Key]:
    """The organisation's persisted documents whose text holds the person's email, or one of
    their names as a word: an admin may have registered a query with them in it. Found by
    their 4,096 slots (walk.DOCUMENTS: 100 keys a BatchGetItem), as nothing indexes them."""
    found = walk.Found(employee.org_id, items.now())
    reading = walk.Walk(table, employee.org_id, families=(walk.DOCUMENTS,), found=found)
    return [
        keys.Key(item[keys.PK]["S"], item[keys.SK]["S"])
        async for item in reading.of_family(walk.DOCUMENTS)
        if _holds_values(item["document"]["S"], employee)
    ]


def _holds_values(text: str, employee: Employee) -> bool:
    folded = text.casefold()
    if employee.email and employee.email.casefold() in folded:
        return True
    words = (name.casefold() for name in (employee.first_name, employee.last_name) if name)
    return any(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", folded) for word in words)


def _entry_keys(employee: Employee) -> list[keys.Key]:
    return [
        layout.NAME_ENTRY.key_of(employee, prefix=prefix)
        for prefix in names.prefixes(employee.first_name, employee.last_name)
    ]


async def _events_about(table: Table, employee: Employee) -> AsyncIterator[AuditEvent]:
    """The audit events of writes to the employee: every month since their id was minted."""
    org_id = employee.org_id
    month, last = keys.audit_bucket(id_time(employee.emp_id)), keys.audit_bucket(items.now())
    while True:
        start = None
        partition_key = layout.AUDIT_EVENT.partition(org_id, month)
        while True:
            result = await table.query(partition_key, limit=_PAGE, start_key=start, consistent=True)
            for item in result.items:
                if item["entityId"]["S"] == employee.emp_id and item["entityType"]["S"] == layout.EMPLOYEE.tag:
                    yield layout.AUDIT_EVENT.read(item)
            if not result.has_more:
                break
            start = Table.start_key_of(result.items[-1])
        if month >= last:
            return
        month = _next_month(month)


def _next_month(bucket: str) -> str:
    year, month = int(bucket[:4]), int(bucket[5:7])
    return f"{year + 1:04d}-01" if month == 12 else f"{year:04d}-{month + 1:02d}"


def _touches(plan: _Plan) -> list[Touch]:
    org_id, employee = plan.employee.org_id, plan.employee
    found = [Touch("redact", layout.AUDIT_EVENT.tag, layout.AUDIT_EVENT.key_of(event)) for event in plan.events]
    found += [Touch("delete", layout.IDEMPOTENCY.tag, key) for key in plan.records]
    found += [Touch("delete", layout.PERSISTED_DOCUMENT.tag, key) for key in plan.documents]
    found += [Touch("delete", layout.NAME_ENTRY.tag, key) for key in plan.entries]
    if plan.membership:
        found.append(Touch("delete", layout.MEMBERSHIP.tag, layout.MEMBERSHIP.key_of(employee)))
    if plan.pointer:
        found.append(Touch("delete", layout.EMAIL_POINTER.tag, layout.EMAIL_POINTER.key_at(org_id, employee.email)))
    found.append(Touch("delete", layout.IDENTITY.tag, layout.IDENTITY.key_at(employee.email)))
    found.append(Touch("tombstone", layout.EMPLOYEE.tag, layout.EMPLOYEE.key_of(employee)))
    return found


# --- writing ------------------------------------------------------------------------------------


async def _in_transactions(table: Table, ops: list[transact.Op]) -> None:
    for start in range(0, len(ops), TRANSACT_LIMIT):
        await table.write(ops[start : start + TRANSACT_LIMIT])


async def _redact(table: Table, events: list[AuditEvent]) -> None:
    """Each event's personal values nulled, the rest as it was (what happened stays)."""
    at = items.now()
    ops = []
    for event in events:
        item = layout.AUDIT_EVENT.item(erased.redacted(event, at))
        ops.append(
            transact.update(
                layout.AUDIT_EVENT.key_of(event),
                [updates.Set("changes", item["changes"]), updates.Set(layout.ERASED_AT, item[layout.ERASED_AT])],
                condition="attribute_exists(PK)",
            )
        )
    await _in_transactions(table, ops)


async def _drop(table: Table, records: list[keys.Key]) -> None:
    await _in_transactions(table, [transact.delete(key) for key in records])


async def _tombstone(table: Table, plan: _Plan) -> Employee:
    """The last transaction: tombstone, pointer, identity, name entries, membership, event."""
    current = plan.employee
    at = items.now()
    tombstone = replace(current, email="", first_name="", last_name="", erased_at=at, version=current.version + 1)
    emp = {":emp": items.s(current.emp_id)}
    still_theirs = "attribute_not_exists(PK) OR #emp = :emp"
    ops = [
        transact.put(
            layout.EMPLOYEE.item(tombstone),
            condition="#version = :expected",
            names={"#version": layout.VERSION},
            values={":expected": items.n(current.version)},
            on_failed=lambda _old: StaleVersion("the employee was changed while being erased"),
        ),
        transact.delete(
            layout.EMAIL_POINTER.key_at(current.org_id, current.email),
            condition=still_theirs,
            names={"#emp": layout.EMP_ID},
            values=emp,
        ),
        transact.delete(
            layout.IDENTITY.key_at(current.email), condition=still_theirs, names={"#emp": layout.EMP_ID}, values=emp
        ),
        *(transact.delete(key) for key in plan.entries),
        # Where no restore can overwrite it: every restore writes this tombstone for them.
        erased.record_op(tombstone),
    ]
    if plan.membership and current.department_id is not None:
        ops.append(transact.delete(layout.MEMBERSHIP.key_of(current)))
        ops.append(
            transact.update(
                layout.DEPARTMENT.key_at(current.org_id, current.department_id),
                [updates.Add(layout.HEADCOUNT, items.n(-1)), updates.Add(layout.COUNTS_REVISION, items.n(1))],
                condition="attribute_exists(PK)",
            )
        )
    await trail.commit(table, ops, _change(current, tombstone))
    return tombstone


def _change(before: Employee, after: Employee) -> Change:
    """The erasure's audit event: the fields erased, with no value but the empty ones left."""
    erased: Item = {name: {"NULL": True} for name in kinds.PERSONAL}
    erased[layout.VERSION] = items.n(before.version)
    tombstone = layout.EMPLOYEE.item(after)
    shown = {name: tombstone[name] for name in (*kinds.PERSONAL, layout.ERASED_AT, layout.VERSION)}
    return Change(ACTION, layout.EMPLOYEE.tag, after.emp_id, after.org_id, erased, shown)
