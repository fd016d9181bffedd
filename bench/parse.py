"""`python -m bench.parse`: client CPU of a 100-item Query and a 100-key BatchGetItem.

Runs a fresh in-memory DynamoDB Local, writes one department of 100 employees, and times
the same calls through three clients: stock boto3 (the "before"), stock plus
``datastore.fastparse``, and the product's client (fastparse and no client-side parameter
validation): first the bare client call, then the datastore function that returns entities.
Client CPU is ``time.process_time`` of this process (DynamoDB Local runs in its own); wall
time is shown beside it. Figures are per call, best of ROUNDS.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from datastore import employees, fastparse, items, layout
from datastore.client import make_client
from datastore.dev.local import DynamoDBLocal
from datastore.entities import Employee, EmployeeStatus, Role
from datastore.ids import new_id
from datastore.pagination import PageRequest
from datastore.provision import ensure_table
from datastore.scope import TenantScope
from datastore.table import Table
from graphql_api.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ITEMS = 100
CALLS = 50
ROUNDS = 5


def _employees(org_id: str, dept_id: str) -> list[Employee]:
    hired = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        Employee(
            org_id=org_id,
            emp_id=new_id(),
            email=f"person{index:03d}@example.com",
            first_name="Bench",
            last_name=f"Person {index:03d}",
            department_id=dept_id,
            role=Role.EMPLOYEE,
            status=EmployeeStatus.ACTIVE,
            hired_at=hired + timedelta(minutes=index),
            terminated_at=None,
            version=1,
        )
        for index in range(ITEMS)
    ]


def _write(client: DynamoDBClient, table_name: str, written: list[items.Item]) -> None:
    for start in range(0, len(written), 25):
        requests: Any = [{"PutRequest": {"Item": item}} for item in written[start : start + 25]]
        while requests:
            response = client.batch_write_item(RequestItems={table_name: requests})
            requests = response.get("UnprocessedItems", {}).get(table_name, [])


def _per_call(call: Callable[[], object]) -> tuple[float, float]:
    """(CPU ms, wall ms) per call, each the best of ROUNDS rounds of CALLS calls."""
    call()
    cpu, wall = [], []
    for _ in range(ROUNDS):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        for _ in range(CALLS):
            call()
        cpu.append((time.process_time() - cpu_start) * 1000 / CALLS)
        wall.append((time.perf_counter() - wall_start) * 1000 / CALLS)
    return min(cpu), min(wall)


def main() -> int:
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-bench-parse-{new_id().lower()}")
        stock = make_client(settings, stock=True)
        parsed = fastparse.install(make_client(settings, stock=True))
        fast = make_client(settings)
        ensure_table(stock, settings.table_name)
        org_id, dept_id = new_id(), new_id()
        staff = _employees(org_id, dept_id)
        _write(
            stock,
            settings.table_name,
            [item for emp in staff for item in (layout.EMPLOYEE.item(emp), layout.MEMBERSHIP.item(emp))],
        )
        scope = TenantScope(org_id, staff[0].emp_id)
        ids = [emp.emp_id for emp in staff]
        wire_keys = [layout.EMPLOYEE.key_at(org_id, emp_id).wire() for emp_id in ids]
        partition = layout.MEMBERSHIP.partition(org_id, dept_id)

        def raw_query(client: DynamoDBClient) -> Callable[[], object]:
            return lambda: client.query(
                TableName=settings.table_name,
                KeyConditionExpression="PK = :pk",
                ExpressionAttributeValues={":pk": {"S": partition}},
                Limit=ITEMS,
                ReturnConsumedCapacity="TOTAL",
            )

        def raw_batch(client: DynamoDBClient) -> Callable[[], object]:
            return lambda: client.batch_get_item(
                RequestItems={settings.table_name: {"Keys": wire_keys}}, ReturnConsumedCapacity="TOTAL"
            )

        def entity_query(client: DynamoDBClient) -> Callable[[], object]:
            table = Table(client, settings.table_name, scope)
            return lambda: employees.list_department_employees(table, dept_id, PageRequest(first=ITEMS))

        def entity_batch(client: DynamoDBClient) -> Callable[[], object]:
            table = Table(client, settings.table_name, scope)
            return lambda: employees.get_employees(table, ids)

        assert (
            len(
                employees.list_department_employees(
                    Table(fast, settings.table_name, scope), dept_id, PageRequest(first=ITEMS)
                ).items
            )
            == ITEMS
        )
        cases = [
            ("Query 100 items, client call", raw_query),
            ("BatchGetItem 100 keys, client call", raw_batch),
            ("Query 100 -> Employees (datastore)", entity_query),
            ("BatchGetItem 100 -> Employees (datastore)", entity_batch),
        ]
        print(f"client CPU (and wall) per call, best of {ROUNDS} x {CALLS} calls, DynamoDB Local in memory")
        print(
            "| call | stock CPU ms | +fastparse CPU ms | product CPU ms | product/stock "
            "| stock wall ms | product wall ms |"
        )
        print("|---|---|---|---|---|---|---|")
        for label, make in cases:
            stock_cpu, stock_wall = _per_call(make(stock))
            parsed_cpu, _ = _per_call(make(parsed))
            fast_cpu, fast_wall = _per_call(make(fast))
            print(
                f"| {label} | {stock_cpu:.2f} | {parsed_cpu:.2f} | {fast_cpu:.2f} | {fast_cpu / stock_cpu:.2f}x | "
                f"{stock_wall:.2f} | {fast_wall:.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
