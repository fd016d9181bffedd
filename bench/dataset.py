"""The bench dataset: 1 org / 20 depts / 1,000 employees / 40 jobs (25 open) / 3,000 applications,
plus a small second tenant. Items come from the datastore's own codec, written with BatchWriteItem.

The datastore is asynchronous: a lane seeds its table under one ``asyncio.run`` at its top
(``on_loop``), as a ``server.py`` command runs its work."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from datastore.config import DatastoreSettings
from datastore.dev.seed import Bulk
from datastore.kinds.entities import Department, Employee, JobPosting, Plan
from datastore.table.scoped import Table
from datastore.table.store import Datastore
from datastore.tenancy.scope import LayoutScope, PlatformScope
from datastore.tenants import organizations
from datastore.upkeep.provision import ensure_table
from datastore.values import items
from datastore.values.ids import new_id

T = TypeVar("T")


@dataclass
class Dataset:
    org_id: str
    admin: Employee
    profile: Employee
    departments: list[Department]
    employees: list[Employee]
    open_jobs: list[JobPosting]


@dataclass(frozen=True)
class BenchTable:
    settings: DatastoreSettings  # the new table's, on the local engine
    data: Dataset


def on_loop(settings: DatastoreSettings, work: Callable[[Datastore], Coroutine[Any, Any, T]]) -> T:
    """``work`` given a Datastore of ``settings``, under ``asyncio.run``; that loop's
    connections to DynamoDB are closed before it ends (they belong to it)."""
    datastore = Datastore(settings)

    async def whole() -> T:
        try:
            return await work(datastore)
        finally:
            await datastore.aclose()

    try:
        return asyncio.run(whole())
    finally:
        datastore.close()


async def provisioned(datastore: Datastore) -> Table:
    """The datastore's table made unless it exists (``ensure_table``); a platform Table of it."""
    await ensure_table(datastore.client, datastore.table(LayoutScope()))
    return datastore.table(PlatformScope())


def seeded(settings: DatastoreSettings) -> Dataset:
    """``settings``' table made and the bench's dataset written into it."""

    async def seed(datastore: Datastore) -> Dataset:
        return await build(await provisioned(datastore))

    return on_loop(settings, seed)


def on_fresh_table(base: DatastoreSettings, endpoint_url: str) -> BenchTable:
    """A new table at ``endpoint_url`` (a DynamoDB Local) with the bench's dataset in it."""
    settings = replace(base, endpoint_url=endpoint_url, table_name=f"hr-bench-{new_id().lower()}")
    return BenchTable(settings, seeded(settings))


async def build(platform: Table) -> Dataset:
    """The dataset written through ``platform`` (any Table of the table)."""
    platform = platform.with_scope(PlatformScope())
    org, admin = await organizations.create_organization(
        platform,
        name="Bench Corp",
        plan=Plan.ENTERPRISE,
        email_domains=["bench.example"],
        admin_email="admin@bench.example",
        admin_first_name="Ada",
        admin_last_name="Admin",
    )
    bulk = Bulk(org.org_id)
    departments = [bulk.department(f"Department {d:02}", 50) for d in range(20)]
    employees = [bulk.employee(departments[n // 50], n) for n in range(1000)]
    jobs = [bulk.job(departments[n % 20], n, open_=n < 25) for n in range(40)]
    for n, employee in enumerate(employees):
        for k in range(3):
            bulk.apply(jobs[(3 * n + k) % 40], employee, 3 * n + k)
    # Managers: the first employee of each department.
    bulk.departments = [
        Department(d.org_id, d.dept_id, d.name, employees[i * 50].emp_id, d.headcount)
        for i, d in enumerate(bulk.departments)
    ]
    await bulk.write(platform)
    # Second, small tenant.
    _, other_admin = await organizations.create_organization(
        platform,
        name="Small Co",
        plan=Plan.FREE,
        email_domains=["small.example"],
        admin_email="admin@small.example",
        admin_first_name="Sam",
        admin_last_name="Small",
    )
    small = Bulk(other_admin.org_id)
    dept = small.department("Only", 5)
    staff = [small.employee(dept, n) for n in range(5)]
    job = small.job(dept, 0)
    small.apply(job, staff[0], 0)
    await small.write(platform)
    open_jobs = sorted((j for j in jobs if j.status.value == "open"), key=lambda j: j.job_id, reverse=True)
    # Q3's caller: in department 1, not its manager, with 3 applications.
    return Dataset(org.org_id, admin, employees[75], departments, employees, open_jobs)


def item_size(item: items.Item) -> int:
    """DynamoDB's item size: attribute names plus values (strings in UTF-8, numbers ~digits/2+1)."""
    size = 0
    for name, value in item.items():
        size += len(name.encode())
        if "S" in value:
            size += len(value["S"].encode())
        elif "N" in value:
            size += (len(value["N"].lstrip("-").replace(".", "")) + 1) // 2 + 1
        else:
            size += len(str(value).encode())
    return size
