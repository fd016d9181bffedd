"""Drift repair: every counter recounted from the items it counts, and put right if asked.

A department's ``headcount`` counts its membership items (AP7); a job's application
counters count its applications by status (AP10). Both are kept in the transactions that
change what they count, so they drift only if some write skipped that path. Everything here
is a Query or a GetItem (AP5, AP7, AP10, AP12; the caller lists organisations with AP14),
never a Scan.

Why a repair loses no concurrent update. Each transaction that changes a counter also adds
one to the item's ``countsRevision`` in the same update (datastore/tenants/employees.py,
datastore/tenants/applications.py). The repair reads the item strongly (revision r0, counter c0),
then recounts the items strongly, then writes ``ADD counter (counted - c0)`` on the
condition ``countsRevision = r0``. If the condition holds at the moment of the write, no
counting transaction committed between the read and the write (each would have raised the
revision; comparing the counters themselves would not do, as +1 then -1 comes back to c0),
so the counted items did not change while the recount paged through them, the recount is
their number at the write, and the counter held c0 until the write: after it the counter
equals the count. A transaction committing later adds its own delta on top of a right value.
If the condition fails, something moved: read, recount and try again. The repair raises the
revision too, so two repairs racing on one item cannot both apply their delta.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Final

from datastore.errors import DatastoreError, Unavailable
from datastore.kinds import layout
from datastore.kinds.entities import ApplicationStatus
from datastore.table import transact, updates
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values import items
from datastore.values.items import Item

# Items read per Query call while recounting or listing (DynamoDB pages at 1 MB anyway).
QUERY_LIMIT: Final = 1000
# Reads, recounts and conditional writes tried for one item before giving up on it, with a
# jittered pause between tries that doubles up to a cap (the item is busy: let writes pass).
ATTEMPTS: Final = 10
PAUSE_SECONDS: Final = 0.02
MAX_PAUSE_SECONDS: Final = 1.0

DEPARTMENT: Final = layout.DEPARTMENT.entity.__name__
JOB_POSTING: Final = layout.JOB_POSTING.entity.__name__

Counts = dict[str, int]
"""Counter attribute name -> value."""


@dataclass(frozen=True, slots=True)
class Drift:
    """One counter that differed from its recount (and, with ``fixed``, was set to it)."""

    org_id: str
    entity: str
    entity_id: str
    field: str
    stored: int
    counted: int
    fixed: bool

    def describe(self) -> str:
        outcome = " (fixed)" if self.fixed else ""
        return (
            f"org {self.org_id} {self.entity} {self.entity_id} {self.field}: "
            f"stored {self.stored}, counted {self.counted}{outcome}"
        )


@dataclass
class Report:
    """What one check covered and the differences it found."""

    departments: int = 0
    jobs: int = 0
    drifts: list[Drift] = field(default_factory=list)


class KeptChanging(Unavailable):
    """An item's counters moved at every try: it is too busy to check right now."""


class _Moved(DatastoreError):
    """The repair's condition failed: the counters moved after they were read."""


async def _query_all(table: Table, partition_key: str, sk_prefix: str) -> AsyncIterator[Item]:
    """Every item of one partition under ``sk_prefix``, strongly consistent, page by page."""
    start_key = None
    while True:
        result = await table.query(
            partition_key, sk_prefix=sk_prefix, limit=QUERY_LIMIT, start_key=start_key, consistent=True
        )
        for item in result.items:
            yield item
        if not result.has_more:
            return
        start_key = Table.start_key_of(result.items[-1])


def _revision(item: Item) -> int | None:
    value = item.get(layout.COUNTS_REVISION)
    return None if value is None else int(value["N"])


def _stored(item: Item, names: tuple[str, ...]) -> Counts:
    return {name: int(item[name]["N"]) if name in item else 0 for name in names}


async def _headcount_of(table: Table, org_id: str, dept_id: str) -> Counts:
    """AP7: the department's membership items."""
    members = _query_all(table, layout.MEMBERSHIP.partition(org_id, dept_id), layout.MEMBERSHIP.sort_prefix)
    return {layout.HEADCOUNT: len([item async for item in members])}


async def _application_counts_of(table: Table, org_id: str, job_id: str) -> Counts:
    """AP10: the job's applications, by status."""
    counts = dict.fromkeys(layout.APPLICATION_COUNTS.values(), 0)
    async for item in _query_all(table, layout.APPLICATION.partition(org_id, job_id), layout.APPLICATION.sort_prefix):
        counts[layout.APPLICATION_COUNTS[ApplicationStatus(item[layout.STATUS]["S"])]] += 1
    return counts


def _repair_op(key: keys.Key, deltas: Counts, revision: int | None) -> transact.Op:
    names = {"#revision": layout.COUNTS_REVISION}
    values: dict[str, updates.AttributeValue] = {}
    adds = [updates.Add(layout.COUNTS_REVISION, items.n(1))]
    adds += [updates.Add(name, items.n(delta)) for name, delta in deltas.items()]
    if revision is None:
        # Never counted since revisions exist: still none when the write lands.
        condition = "attribute_exists(PK) AND attribute_not_exists(#revision)"
    else:
        condition = "#revision = :seen"
        values[":seen"] = items.n(revision)

    def moved(_old: Item | None) -> _Moved:
        return _Moved("the counters moved since they were read")

    return transact.update(key, adds, condition=condition, names=names, values=values, on_failed=moved)


async def _check_item(
    table: Table,
    *,
    entity: str,
    entity_id: str,
    key: keys.Key,
    names: tuple[str, ...],
    recount: Callable[[], Awaitable[Counts]],
    fix: bool,
) -> list[Drift]:
    """Read, recount, compare; report what differs, and with ``fix`` repair it (module docstring)."""
    for attempt in range(ATTEMPTS):
        if attempt:
            await asyncio.sleep(random.uniform(0, min(MAX_PAUSE_SECONDS, PAUSE_SECONDS * 2**attempt)))
        item = await table.get(key, consistent=True)
        if item is None:
            return []  # gone since it was listed
        stored, revision = _stored(item, names), _revision(item)
        counted = await recount()
        deltas = {name: counted[name] - stored[name] for name in names if counted[name] != stored[name]}
        if not deltas:
            return []
        drifts = [
            Drift(table.tenant.org_id, entity, entity_id, _label(name), stored[name], counted[name], fixed=fix)
            for name in deltas
        ]
        if fix:
            try:
                await table.write([_repair_op(key, deltas, revision)])
            except _Moved:
                continue
            return drifts
        # Only report a difference seen on still counters: a write landing during the
        # recount would show one that is not there.
        again = await table.get(key, consistent=True)
        if again is not None and _revision(again) == revision:
            return drifts
    raise KeptChanging(f"the counters of {entity} {entity_id} kept changing; try again later")


def _label(name: str) -> str:
    if name == layout.HEADCOUNT:
        return name
    status = next(status for status, attribute in layout.APPLICATION_COUNTS.items() if attribute == name)
    return f"{layout.APPLICATION_COUNTS_LABEL}.{status.value}"


async def check_organization(table: Table, *, fix: bool = False) -> Report:
    """Every department (AP5) and job (AP12) of ``table``'s tenant, recounted."""
    org_id = table.tenant.org_id
    report = Report()
    async for item in _query_all(table, layout.DEPARTMENT.partition(org_id), layout.DEPARTMENT.sort_prefix):
        dept = layout.DEPARTMENT.read(item)
        report.departments += 1
        report.drifts.extend(
            await _check_item(
                table,
                entity=DEPARTMENT,
                entity_id=dept.dept_id,
                key=layout.DEPARTMENT.key_of(dept),
                names=(layout.HEADCOUNT,),
                recount=partial(_headcount_of, table, org_id, dept.dept_id),
                fix=fix,
            )
        )
    async for item in _query_all(table, layout.JOB_POSTING.partition(org_id), layout.JOB_POSTING.sort_prefix):
        job = layout.JOB_POSTING.read(item)
        report.jobs += 1
        report.drifts.extend(
            await _check_item(
                table,
                entity=JOB_POSTING,
                entity_id=job.job_id,
                key=layout.JOB_POSTING.key_of(job),
                names=tuple(layout.APPLICATION_COUNTS.values()),
                recount=partial(_application_counts_of, table, org_id, job.job_id),
                fix=fix,
            )
        )
    return report
