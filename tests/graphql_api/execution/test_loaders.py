"""Loaders hand whole batches to the datastore, which alone cuts them into BatchGetItem calls."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from datastore.aws import calls
from datastore.table.scoped import Table
from datastore.values import ids
from graphql_api.execution.loaders import Loaders
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.support import employee_items, raw_employees, write_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

EMPLOYEES = 250


def admit_all() -> None:
    """The session's ``admit_call`` when nothing refuses a call."""


def test_employee_loader__250_ids__three_batch_gets_in_one_loader_batch(tenant: Tenant, client: DynamoDBClient) -> None:
    staff = raw_employees(tenant.org_id, EMPLOYEES - 1)
    write_items(client, tenant.table.name, [item for emp in staff for item in employee_items(emp)])
    ids = [tenant.admin.emp_id] + [emp.emp_id for emp in staff]

    async def load(table: Table) -> list[Any]:
        return list((await Loaders(table, admit_all).employee.get_many(ids)).values())

    with calls.listening() as log:
        loaded = run(load(tenant.table))
    assert [emp.emp_id for emp in loaded] == ids
    assert log.operations() == ["BatchGetItem"] * 3
    assert len({call.batch for call in log.calls}) == 1
    assert len(log.waves()) == 1


def test_entity_loader__kinds_of_one_turn__one_batch_get_item(tenant: Tenant) -> None:
    """The caller check's organisation and employee share the call with the query's reads."""
    department = tenant.department("Shared")

    async def load(table: Table) -> list[Any]:
        loaders = Loaders(table, admit_all)
        return list(
            await asyncio.gather(
                loaders.organization.get(tenant.org_id),
                loaders.employee.get(tenant.admin.emp_id),
                loaders.department.get(department.dept_id),
                loaders.subscription.get(tenant.org_id),
            )
        )

    with calls.listening() as log:
        organization, admin, found, subscription = run(load(tenant.table))
    assert organization.org_id == tenant.org_id
    assert admin.emp_id == tenant.admin.emp_id
    assert found.name == "Shared"
    assert subscription.org_id == tenant.org_id
    assert log.operations() == ["BatchGetItem"]


def test_entity_loader__unknown_or_foreign_id__answered_alone(tenant: Tenant) -> None:
    async def load(table: Table) -> list[Any]:
        loaders = Loaders(table, admit_all)
        return list(
            await asyncio.gather(
                loaders.employee.get(ids.new_id()),
                loaders.employee.get(tenant.admin.emp_id),
                loaders.organization.get(ids.new_id()),  # another organisation: none of ours
                return_exceptions=True,
            )
        )

    with calls.listening() as log:
        unknown, admin, other = run(load(tenant.table))
    assert unknown is None and other is None
    assert admin.emp_id == tenant.admin.emp_id
    assert log.operations() == ["BatchGetItem"]
