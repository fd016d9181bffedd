"""The event loop's Table (datastore/async_table.py) against DynamoDB Local: the same items,
calls and capacity as the boto3 Table, the same scope checks, its BatchGetItem chunks and the
retry of unprocessed keys."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

import pytest
from aiodynamo.http.types import Request, Response

from datastore import calls, employees, ids, keys, layout
from datastore.async_client import AsyncDynamo
from datastore.async_table import AsyncTable
from datastore.errors import InvalidInput, ScopeViolation, Unavailable
from datastore.pagination import PageRequest
from datastore.scope import Scope, TenantScope
from datastore.table import RetryPolicy
from tests.conftest import Tenant, TenantFactory
from tests.datastore import faults
from tests.datastore.support import BulkEmployees

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")
FAST = RetryPolicy(attempts=3, base_seconds=0.001, cap_seconds=0.002)


def run(client: DynamoDBClient, awaitable: Awaitable[T]) -> T:
    """``awaitable`` on a loop of its own, whose connections are closed after it."""

    async def main() -> T:
        try:
            return await awaitable
        finally:
            await AsyncDynamo.beside(client).aclose()

    return asyncio.run(main())


def async_table(client: DynamoDBClient, table_name: str, scope: Scope) -> AsyncTable:
    return AsyncTable(AsyncDynamo.beside(client).client(), table_name, scope, retry=FAST)


def test_get__the_boto3_tables_item_and_its_call_recorded_with_its_capacity(
    client: DynamoDBClient, table_name: str, tenant: Tenant
) -> None:
    key = layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)
    table = async_table(client, table_name, tenant.table.scope)

    with calls.listening() as log:
        found = run(client, table.get(key))
        missing = run(client, table.get(layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())))

    assert found == tenant.table.get(key)
    assert missing is None
    assert log.operations() == ["GetItem", "GetItem"]
    assert [call.read_units for call in log.snapshot()] == [0.5, 0.5]
    assert all(call.finished is not None and call.error is None for call in log.snapshot())


def test_batch_get__101_keys_and_duplicates__two_even_chunks_one_answer_per_key_in_order(
    client: DynamoDBClient, table_name: str, tenant: Tenant, bulk_employees: BulkEmployees
) -> None:
    staff = bulk_employees(tenant.org_id, 101)
    wanted = [layout.EMPLOYEE.key_at(tenant.org_id, emp.emp_id) for emp in staff]
    unknown = layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())
    table = async_table(client, table_name, tenant.table.scope)

    with calls.listening() as log:
        found = run(client, table.batch_get([*wanted, unknown, wanted[0]]))

    assert [None if item is None else item[keys.SK]["S"] for item in found] == [
        *(key.sk for key in wanted),
        None,
        wanted[0].sk,
    ]
    sizes = sorted(len(call.params["RequestItems"][table_name]["Keys"]) for call in log.snapshot())
    assert sizes == [51, 51]  # 102 distinct keys, two calls in flight at once
    assert log.operations() == ["BatchGetItem", "BatchGetItem"]


def test_batch_get__unprocessed_keys__sent_again_until_read(
    client: DynamoDBClient, table_name: str, tenant: Tenant
) -> None:
    key = layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)
    other = layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())
    table = async_table(client, table_name, tenant.table.scope)
    answered = 0

    async def nothing_processed_once(request: Request) -> Response | None:
        nonlocal answered
        if answered:
            return None
        answered += 1
        keys_sent = json.loads(request.body or b"{}")["RequestItems"][table_name]["Keys"]
        body = {"Responses": {table_name: []}, "UnprocessedKeys": {table_name: {"Keys": keys_sent}}}
        return Response(200, json.dumps(body).encode())

    with faults.on_send(client, nothing_processed_once), calls.listening() as log:
        found = run(client, table.batch_get([key, other]))

    assert found[0] is not None and found[0][keys.SK]["S"] == key.sk
    assert found[1] is None
    assert log.operations() == ["BatchGetItem", "BatchGetItem"]


def test_batch_get__keys_left_unprocessed_every_time__unavailable_after_the_policys_tries(
    client: DynamoDBClient, table_name: str, tenant: Tenant
) -> None:
    key = layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)
    table = async_table(client, table_name, tenant.table.scope)

    async def never_processed(request: Request) -> Response:
        keys_sent = json.loads(request.body or b"{}")["RequestItems"][table_name]["Keys"]
        body = {"Responses": {table_name: []}, "UnprocessedKeys": {table_name: {"Keys": keys_sent}}}
        return Response(200, json.dumps(body).encode())

    with faults.on_send(client, never_processed), calls.listening() as log, pytest.raises(Unavailable) as raised:
        run(client, table.batch_get([key, layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())]))

    assert "unprocessed" in str(raised.value)
    assert log.count("BatchGetItem") == FAST.attempts


def test_page__the_boto3_tables_page__then_the_next_from_its_cursor(
    client: DynamoDBClient, table_name: str, tenant: Tenant, bulk_employees: BulkEmployees
) -> None:
    bulk_employees(tenant.org_id, 9)
    table = async_table(client, table_name, tenant.table.scope)
    query = employees.employees_of(tenant.organization.org_id)

    first = run(client, table.page(query, PageRequest(first=4)))
    second = run(client, table.page(query, PageRequest(first=100, after=first.cursors[-1])))

    assert first == tenant.table.page(query, PageRequest(first=4))
    assert first.has_next and not second.has_next
    assert len(first.items) + len(second.items) == 10  # the admin and nine more
    assert {emp.emp_id for emp in first.items}.isdisjoint(emp.emp_id for emp in second.items)


def test_page__a_cursor_of_another_list__invalid_input_before_any_call(
    client: DynamoDBClient, table_name: str, tenant: Tenant
) -> None:
    table = async_table(client, table_name, tenant.table.scope)
    foreign = {keys.PK: "ORG#other", keys.SK: "EMP#x", keys.GSI1PK: "ORG#other#EMP", keys.GSI1SK: "x"}

    with calls.listening() as log, pytest.raises(InvalidInput):
        run(client, table.page(employees.employees_of(tenant.organization.org_id), PageRequest(first=3, after=foreign)))

    assert log.count() == 0


def test_scope__another_tenants_partition__refused_before_any_call(
    client: DynamoDBClient, table_name: str, make_tenant: TenantFactory
) -> None:
    mine, theirs = make_tenant(), make_tenant()
    table = async_table(client, table_name, TenantScope(mine.organization.org_id, mine.admin.emp_id))
    their_key = layout.EMPLOYEE.key_at(theirs.org_id, theirs.admin.emp_id)

    with calls.listening() as log:
        with pytest.raises(ScopeViolation):
            run(client, table.get(their_key))
        with pytest.raises(ScopeViolation):
            run(client, table.batch_get([layout.EMPLOYEE.key_at(mine.org_id, mine.admin.emp_id), their_key]))
        with pytest.raises(ScopeViolation):
            run(client, table.page(employees.employees_of(theirs.organization.org_id), PageRequest(first=3)))

    assert log.count() == 0


def test_scope__an_item_of_another_partition_in_the_answer__refused(
    client: DynamoDBClient, table_name: str, make_tenant: TenantFactory
) -> None:
    """What arrives is checked too, not only what is asked (a wrong answer never reaches a tenant)."""
    mine, theirs = make_tenant(), make_tenant()
    table = async_table(client, table_name, TenantScope(mine.organization.org_id, mine.admin.emp_id))
    their_item = theirs.table.get(layout.EMPLOYEE.key_at(theirs.org_id, theirs.admin.emp_id))

    async def answer_theirs(_request: Request) -> Response:
        return Response(200, json.dumps({"Item": their_item}).encode())

    with faults.on_send(client, answer_theirs), pytest.raises(ScopeViolation):
        run(client, table.get(layout.EMPLOYEE.key_at(mine.org_id, mine.admin.emp_id)))


def test_scope__an_item_of_another_tenant_among_a_querys_or_a_batchs_items__refused(
    client: DynamoDBClient, table_name: str, make_tenant: TenantFactory
) -> None:
    """Every item of a page is checked, on the partition the call read (the table's or the
    index's), not only the first: one of another tenant among the tenant's own refuses the answer."""
    mine, theirs = make_tenant(), make_tenant()
    table = async_table(client, table_name, TenantScope(mine.organization.org_id, mine.admin.emp_id))
    my_key = layout.EMPLOYEE.key_at(mine.org_id, mine.admin.emp_id)
    my_item = mine.table.get(my_key)
    their_item = theirs.table.get(layout.EMPLOYEE.key_at(theirs.org_id, theirs.admin.emp_id))
    assert my_item is not None and their_item is not None
    # Their index partition under my table partition: a Query of the index reads GSI1PK.
    theirs_on_index = {**my_item, keys.GSI1PK: their_item[keys.GSI1PK]}
    answers = {
        "Query": {"Items": [my_item, my_item, their_item], "Count": 3, "ScannedCount": 3},
        "BatchGetItem": {"Responses": {table_name: [my_item, their_item]}, "UnprocessedKeys": {}},
    }

    async def answer(request: Request) -> Response:
        action = (request.headers or {})["X-Amz-Target"].rsplit(".", 1)[-1]
        return Response(200, json.dumps(answers[action]).encode())

    mine_query = employees.employees_of(mine.organization.org_id)
    with faults.on_send(client, answer):
        with pytest.raises(ScopeViolation, match=theirs.org_id):
            run(client, table.query(my_key.pk, limit=5))
        with pytest.raises(ScopeViolation, match=theirs.org_id):
            run(client, table.batch_get([my_key]))
        answers["Query"] = {"Items": [my_item, theirs_on_index], "Count": 2, "ScannedCount": 2}
        with pytest.raises(ScopeViolation, match=theirs.org_id):
            run(client, table.page(mine_query, PageRequest(first=3)))
        assert len(run(client, table.query(my_key.pk, limit=5)).items) == 2  # the table's partition is mine
