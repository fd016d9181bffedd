"""Loaders hand whole batches to the datastore, which alone cuts them into BatchGetItem calls."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from datastore import calls, ids
from datastore.table import Table
from graphql_api.schema.loaders import Loaders
from tests.conftest import Tenant
from tests.datastore.support import employee_items, raw_employees, write_items

T = TypeVar("T")
EMPLOYEES = 250


def runner(pool: ThreadPoolExecutor) -> Callable[..., Any]:
    async def run(fn: Callable[..., T], *args: Any) -> T:
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(context.run, fn, *args))

    return run


def test_employee_loader__250_ids__three_batch_gets_in_one_loader_batch(tenant: Tenant) -> None:
    staff = raw_employees(tenant.org_id, EMPLOYEES - 1)
    write_items(tenant.table.client, tenant.table.name, [item for emp in staff for item in employee_items(emp)])
    ids = [tenant.admin.emp_id] + [emp.emp_id for emp in staff]

    async def load(table: Table, pool: ThreadPoolExecutor) -> list[Any]:
        return list((await Loaders(table, runner(pool)).employee.get_many(ids)).values())

    with ThreadPoolExecutor(4) as pool, ThreadPoolExecutor(4) as fanout, calls.listening() as log:
        table = Table(tenant.table.client, tenant.table.name, tenant.table.scope, fanout=fanout)
        loaded = asyncio.run(load(table, pool))
    assert [emp.emp_id for emp in loaded] == ids
    assert log.operations() == ["BatchGetItem"] * 3
    assert len({call.batch for call in log.calls}) == 1
    assert len(log.waves()) == 1


def test_entity_loader__kinds_of_one_turn__one_batch_get_item(tenant: Tenant) -> None:
    """The caller check's organisation and employee share the call with the query's reads."""
    department = tenant.department("Shared")

    async def load(table: Table, pool: ThreadPoolExecutor) -> list[Any]:
        loaders = Loaders(table, runner(pool))
        return list(
            await asyncio.gather(
                loaders.organization.get(tenant.org_id),
                loaders.employee.get(tenant.admin.emp_id),
                loaders.department.get(department.dept_id),
                loaders.subscription.get(tenant.org_id),
            )
        )

    with ThreadPoolExecutor(2) as pool, calls.listening() as log:
        organization, admin, found, subscription = asyncio.run(load(tenant.table, pool))
    assert organization.org_id == tenant.org_id
    assert admin.emp_id == tenant.admin.emp_id
    assert found.name == "Shared"
    assert subscription.org_id == tenant.org_id
    assert log.operations() == ["BatchGetItem"]


def test_entity_loader__unknown_or_foreign_id__answered_alone(tenant: Tenant) -> None:
    async def load(table: Table, pool: ThreadPoolExecutor) -> list[Any]:
        loaders = Loaders(table, runner(pool))
        return list(
            await asyncio.gather(
                loaders.employee.get(ids.new_id()),
                loaders.employee.get(tenant.admin.emp_id),
                loaders.organization.get(ids.new_id()),  # another organisation: none of ours
                return_exceptions=True,
            )
        )

    with ThreadPoolExecutor(2) as pool, calls.listening() as log:
        unknown, admin, other = asyncio.run(load(tenant.table, pool))
    assert unknown is None and other is None
    assert admin.emp_id == tenant.admin.emp_id
    assert log.operations() == ["BatchGetItem"]
