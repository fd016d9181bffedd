"""Setup helpers for the datastore suite: bulk items written straight to the table.

Bulk items are written with BatchWriteItem only to set a test up quickly; every behaviour
under test goes through the datastore's own functions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from datastore.kinds import layout
from datastore.kinds.entities import Department, Employee, EmployeeStatus, Identity, Role
from datastore.table.pagination import Page, PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenants import departments, employees
from datastore.values import ids, items
from tests.blocking import run

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")

BATCH_WRITE_LIMIT = 25
BULK_HIRED_FROM = datetime(2020, 1, 1, tzinfo=UTC)

BulkWriter = Callable[[Sequence[items.Item]], None]
BulkEmployees = Callable[..., list[Employee]]


def write_items(client: DynamoDBClient, table_name: str, batch: Sequence[items.Item]) -> None:
    for start in range(0, len(batch), BATCH_WRITE_LIMIT):
        requests: list[Any] = [{"PutRequest": {"Item": item}} for item in batch[start : start + BATCH_WRITE_LIMIT]]
        while requests:
            response = client.batch_write_item(RequestItems={table_name: requests})
            requests = list(response.get("UnprocessedItems", {}).get(table_name, []))


def raw_employees(org_id: str, count: int, department: Department | None = None) -> list[Employee]:
    """``count`` active employees hired a minute apart, oldest first (not yet written)."""
    return [
        Employee(
            org_id=org_id,
            emp_id=ids.new_id(),
            email=f"bulk{ids.new_id().lower()}@example.com",
            first_name="Bulk",
            last_name=f"Person {index:03d}",
            department_id=None if department is None else department.dept_id,
            role=Role.EMPLOYEE,
            status=EmployeeStatus.ACTIVE,
            hired_at=BULK_HIRED_FROM + timedelta(minutes=index),
            terminated_at=None,
            version=1,
        )
        for index in range(count)
    ]


def employee_items(emp: Employee) -> list[items.Item]:
    identity = Identity(emp.email, emp.org_id, emp.emp_id)
    written = [layout.EMPLOYEE.item(emp), layout.IDENTITY.item(identity), layout.EMAIL_POINTER.item(identity)]
    written += employees.name_entry_items(emp)
    if emp.department_id is not None:
        written.append(layout.MEMBERSHIP.item(emp))
    return written


def gsi_order(emp: Employee) -> str:
    """The sort key AP3 orders employees by."""
    return str(layout.EMPLOYEE.item(emp)[keys.GSI1SK]["S"])


def all_pages(fetch: Callable[[PageRequest], Awaitable[Page[T]]]) -> list[T]:
    """Every item of a list, following its cursors 100 at a time (each page read on the
    session's loop, tests/blocking.py)."""
    found: list[T] = []
    request = PageRequest(first=100)
    while True:
        page = run(fetch(request))
        found.extend(page.items)
        if not page.has_next:
            return found
        request = PageRequest(first=100, after=page.end_cursor)


def assert_headcounts_hold(table: Table, depts: Sequence[Department]) -> None:
    """Each department's counter == its membership items == active employees naming it."""
    everyone = all_pages(partial(employees.list_employees, table))
    for dept in depts:
        stored = run(departments.get_department(table, dept.dept_id, consistent=True))
        assert stored is not None
        members = all_pages(partial(employees.list_department_employees, table, dept.dept_id))
        active_in = [e for e in everyone if e.department_id == dept.dept_id and e.status is EmployeeStatus.ACTIVE]
        assert stored.headcount == len(members) == len(active_in), dept.name
        assert {m.emp_id for m in members} == {e.emp_id for e in active_in}


def raw_get(client: DynamoDBClient, table_name: str, key: keys.Key) -> items.Item | None:
    """An item read past every scope (checks on items no scope may read back, such as markers)."""
    found: items.Item | None = client.get_item(TableName=table_name, Key=key.wire(), ConsistentRead=True).get("Item")
    return found


def written_before_search(client: DynamoDBClient, table: Table, count: int) -> list[Employee]:
    """``count`` employees of ``table``'s tenant, written with only the items they had before
    name search (no name entries): what ``server.py index-names`` exists for."""
    staff = raw_employees(table.tenant.org_id, count)
    old_items = [
        item
        for emp in staff
        for item in (layout.EMPLOYEE.item(emp), layout.IDENTITY.item(Identity(emp.email, emp.org_id, emp.emp_id)))
    ]
    write_items(client, table.name, old_items)
    return staff


def drop_table(client: DynamoDBClient, name: str) -> None:
    """Delete a table a test made for itself, and wait until it is gone."""
    client.delete_table(TableName=name)
    client.get_waiter("table_not_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
