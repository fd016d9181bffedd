"""Loaders hand whole batches to the datastore, which alone cuts them into BatchGetItem calls."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from datastore import calls
from datastore.table import Table
from graphql_api.loaders import Loader, Loaders
from tests.conftest import Tenant
from tests.datastore.support import employee_items, raw_employees, write_items

T = TypeVar("T")
EMPLOYEES = 250


def runner(pool: ThreadPoolExecutor) -> Callable[..., Any]:
    async def run(fn: Callable[..., T], *args: Any) -> T:
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(context.run, fn, *args))

    return run


def test_loader__many_keys__one_batch_call_with_every_key() -> None:
    seen: list[list[int]] = []

    def batch(keys: list[int]) -> list[int]:
        seen.append(keys)
        return [key * 2 for key in keys]

    async def load() -> list[int]:
        with ThreadPoolExecutor(2) as pool:
            loader: Loader[int, int] = Loader(runner(pool), batch)
            return list(await loader.load_many(list(range(EMPLOYEES))))

    assert asyncio.run(load()) == [key * 2 for key in range(EMPLOYEES)]
    assert seen == [list(range(EMPLOYEES))]


def test_employee_loader__250_ids__three_batch_gets_in_one_loader_batch(tenant: Tenant) -> None:
    staff = raw_employees(tenant.org_id, EMPLOYEES - 1)
    write_items(tenant.table.client, tenant.table.name, [item for emp in staff for item in employee_items(emp)])
    ids = [tenant.admin.emp_id] + [emp.emp_id for emp in staff]

    async def load(table: Table, pool: ThreadPoolExecutor) -> list[Any]:
        return list(await Loaders(table, runner(pool)).employee.load_many(ids))

    with ThreadPoolExecutor(4) as pool, ThreadPoolExecutor(4) as fanout, calls.listening() as log:
        table = Table(tenant.table.client, tenant.table.name, tenant.table.scope, fanout=fanout)
        loaded = asyncio.run(load(table, pool))
    assert [emp.emp_id for emp in loaded] == ids
    assert log.operations() == ["BatchGetItem"] * 3
    assert len({call.batch for call in log.calls}) == 1
    assert len(log.waves()) == 1
