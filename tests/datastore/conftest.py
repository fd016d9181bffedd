"""Fixtures of the datastore suite: bulk setup written straight to the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from datastore.kinds.entities import Department, Employee
from datastore.values import items
from tests.datastore.support import BulkEmployees, BulkWriter, employee_items, raw_employees, write_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture
def bulk_write(client: DynamoDBClient, table_name: str) -> BulkWriter:
    def write(batch: Sequence[items.Item]) -> None:
        write_items(client, table_name, batch)

    return write


@pytest.fixture
def bulk_employees(bulk_write: BulkWriter) -> BulkEmployees:
    """Write ``count`` employees of ``org_id`` straight to the table (setup only).

    With a department, the membership items are written too but not the headcount: tests
    that need the counter create their employees through ``employees.create_employee``.
    """

    def make(org_id: str, count: int, department: Department | None = None) -> list[Employee]:
        created = raw_employees(org_id, count, department)
        bulk_write([item for emp in created for item in employee_items(emp)])
        return created

    return make
