"""`python -m bench.lifecycle`: a customer's data through its whole life, at 2,000 employees.

On a fresh in-memory DynamoDB Local: one organisation of 2,000 employees in 40 departments,
80 jobs (50 open) and 6,000 applications, seeded as bench/dataset.py seeds (the datastore's
own codec, BatchWriteItem), and one person written through the datastore's writes (created,
applied to a job, terminated under an idempotency key: audit events and records about them),
next to a small second organisation. Then, each measured with every DynamoDB call counted:

1. export: ``datastore.lifecycle.export`` into a gzip file, as ``server.py export`` writes it:
   size, seconds, items, calls, RCU;
2. the round trip: that file restored into an empty table (``Restore`` from a FileSource, as
   ``server.py restore`` does), exported again: the item lines, sorted, compared byte for byte;
3. erasure of the person: items touched by kind and WCU; then a full export searched for
   their email and names;
4. offboarding: closed (no grace) and deleted: items deleted, seconds, WCU; the second
   organisation's items by kind before and after.

Figures are printed; nothing is asserted here (the tests in tests/datastore/lifecycle/ do).
The whole run is awaited under one ``asyncio.run``, as a ``server.py`` command runs.
"""

from __future__ import annotations

import gzip
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from bench.dataset import on_loop, provisioned
from datastore.aws import calls
from datastore.dev.local import DynamoDBLocal
from datastore.dev.seed import Bulk
from datastore.kinds.entities import Plan, Role
from datastore.kinds.model import ENTITY
from datastore.lifecycle import erasure, offboarding, restore, walk
from datastore.lifecycle.export import Export
from datastore.table.scoped import Table
from datastore.table.store import Datastore
from datastore.tenancy.scope import LayoutScope, LifecycleScope, TenantScope
from datastore.tenants import applications, employees, organizations
from datastore.upkeep.provision import ensure_table
from datastore.values.ids import EmployeeId, OrgId, new_id
from graphql_api.settings import Settings

EMPLOYEES, DEPARTMENTS, JOBS, OPEN_JOBS, APPLICATIONS_EACH = 2000, 40, 80, 50, 3
DOMAIN = "life.example"
# The person erased: names no seeded employee has, so a search finds only them.
PERSON = ("Zephyrine", "Quillfeather", f"zephyrine.quillfeather@{DOMAIN}")


@dataclass
class Measured:
    seconds: float = 0.0
    calls: int = 0
    rcu: float = 0.0
    wcu: float = 0.0


@contextmanager
def measured(run: Measured) -> Iterator[Measured]:
    """Every DynamoDB call made meanwhile (any thread) and the time, added into ``run``."""
    started = time.perf_counter()
    with calls.listening() as log:
        yield run
    run.seconds += time.perf_counter() - started
    done = log.snapshot()
    run.calls += len(done)
    run.rcu += sum(call.read_units for call in done)
    run.wcu += sum(call.write_units for call in done)


def export_lines(table: Table, org_id: OrgId) -> AsyncIterator[bytes]:
    reader = table.with_scope(LifecycleScope(org_id, "export", "bench"))
    return Export(reader, org_id, source=table.name).lines()


def item_lines(lines: list[bytes]) -> list[bytes]:
    """The item lines, sorted, less the restore's own audit event (which it adds)."""
    return sorted(line for line in lines if line.startswith(b'{"family"') and RESTORE_EVENT not in line)


RESTORE_EVENT = b'"action":{"S":"organization.restore"}'


async def counted(table: Table, org_id: OrgId) -> Counter[str]:
    walker = table.with_scope(LifecycleScope(org_id, "offboard", "bench"))
    return Counter([item[ENTITY]["S"] async for _family, item in walk.Walk(walker, org_id, consistent=True)])


async def seed(platform: Table) -> tuple[OrgId, OrgId, EmployeeId]:
    """The two organisations; the id of the person to erase."""
    org, admin = await organizations.create_organization(
        platform,
        name="Lifecycle Corp",
        plan=Plan.ENTERPRISE,
        email_domains=[DOMAIN],
        admin_email=f"admin@{DOMAIN}",
        admin_first_name="Ada",
        admin_last_name="Admin",
    )
    bulk = Bulk(org.org_id)
    per = EMPLOYEES // DEPARTMENTS
    departments = [bulk.department(f"Department {d:02}", per) for d in range(DEPARTMENTS)]
    people = [bulk.employee(departments[n // per], n) for n in range(EMPLOYEES)]
    jobs = [bulk.job(departments[n % DEPARTMENTS], n, open_=n < OPEN_JOBS) for n in range(JOBS)]
    for n, employee in enumerate(people):
        for k in range(APPLICATIONS_EACH):
            bulk.apply(jobs[(APPLICATIONS_EACH * n + k) % JOBS], employee, APPLICATIONS_EACH * n + k)
    await bulk.write(platform)

    tenant = platform.with_scope(TenantScope(org.org_id, admin.emp_id))
    first, last, email = PERSON
    person = await employees.create_employee(
        tenant,
        email=email,
        first_name=first,
        last_name=last,
        department_id=departments[0].dept_id,
        role=Role.EMPLOYEE,
        idempotency_key="bench-hire",
    )
    await applications.apply_to_job(tenant, jobs[0].job_id, person.emp_id, idempotency_key="bench-apply")
    await employees.terminate_employee(tenant, person.emp_id, idempotency_key="bench-leave")

    _, small_admin = await organizations.create_organization(
        platform,
        name="Small Co",
        plan=Plan.FREE,
        email_domains=["small.example"],
        admin_email="admin@small.example",
        admin_first_name="Sam",
        admin_last_name="Small",
    )
    small = Bulk(small_admin.org_id)
    dept = small.department("Only", 5)
    staff = [small.employee(dept, n) for n in range(5)]
    small.apply(small.job(dept, 0), staff[0], 0)
    await small.write(platform)
    return org.org_id, small_admin.org_id, person.emp_id


async def lifetime(datastore: Datastore, scratch: Path) -> None:
    """The seeding and the four steps, each measured."""
    table = await provisioned(datastore)
    print(f"seeding {EMPLOYEES} employees, {JOBS} jobs, {EMPLOYEES * APPLICATIONS_EACH} applications ...")
    org_id, other_id, person = await seed(table)

    # 1. Export.
    path = scratch / "export.jsonl.gz"
    exported = Measured()
    with measured(exported), gzip.open(path, "wb") as out:
        lines = []
        async for line in export_lines(table, org_id):
            out.write(line)
            lines.append(line)
    first = item_lines(lines)
    print(
        f"export: {len(first)} items, {path.stat().st_size / 1e6:.2f} MB gzip "
        f"({sum(map(len, lines)) / 1e6:.2f} MB of lines), {exported.seconds:.1f} s, "
        f"{exported.calls} calls, {exported.rcu:.1f} RCU"
    )

    # 2. Round trip: restore into an empty table, export again.
    empty_name = f"hr-life-empty-{new_id().lower()}"
    target = Table(datastore.aio, empty_name, LifecycleScope(org_id, "restore", "bench"))
    await ensure_table(datastore.client, target.with_scope(LayoutScope()))
    restored = Measured()
    with measured(restored):
        report = await restore.Restore(target, org_id, restore.FileSource(path), drain_seconds=0).run()
    again = item_lines([line async for line in export_lines(target, org_id)])
    written = sum(report.written.values())
    print(
        f"restore into an empty table: {written} items written in {restored.seconds:.1f} s, "
        f"{restored.calls} calls, {restored.wcu:.1f} WCU; round trip: "
        + ("identical item lines" if again == first else f"DIFFERENT ({len(first)} vs {len(again)} lines)")
    )

    # 3. Erasure.
    tenant = table.with_scope(TenantScope(org_id, "bench"))
    erased = Measured()
    with measured(erased):
        done = await erasure.erase_person(tenant, person)
    after = b"".join([line async for line in export_lines(table, org_id)])
    found = [value for value in PERSON if value.encode() in after or value.lower().encode() in after.lower()]
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(done.by_kind().items()))
    print(
        f"erasure: {len(done.touches)} items touched ({kinds}), "
        f"{erased.calls} calls, {erased.wcu:.1f} WCU, {erased.seconds:.2f} s; "
        f"the export after it holds {found or 'none'} of the person's email and names"
    )

    # 4. Offboarding.
    other_before = await counted(table, other_id)
    operator = table.with_scope(LifecycleScope(org_id, "offboard", "bench"))
    closing = Measured()
    with measured(closing):
        await offboarding.close(operator, org_id, grace=timedelta(0))
    deleting = Measured()
    with measured(deleting):
        receipt = await offboarding.delete(operator, org_id)
    other_after = await counted(table, other_id)
    left = await counted(table, org_id)
    print(
        f"offboarding: closed in {closing.seconds:.2f} s ({closing.wcu:.1f} WCU); "
        f"{sum(receipt.deleted.values())} items deleted in {deleting.seconds:.1f} s, "
        f"{deleting.calls} calls, {deleting.wcu:.1f} WCU; {sum(left.values())} left"
    )
    print(f"  the other organisation's items before: {dict(sorted(other_before.items()))}")
    print(f"  the other organisation's items after:  {dict(sorted(other_after.items()))}")


def main() -> int:
    base = Settings.load(defaults={"DYNAMODB_READ_TIMEOUT_SECONDS": "10"}).datastore
    with DynamoDBLocal(base.local_cache_dir) as local, tempfile.TemporaryDirectory() as scratch:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-life-{new_id().lower()}")
        on_loop(settings, lambda datastore: lifetime(datastore, Path(scratch)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
