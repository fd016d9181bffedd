"""The backfill of name entries for employees written before name search."""

from __future__ import annotations

from mypy_boto3_dynamodb import DynamoDBClient

from datastore.kinds.entities import Employee
from datastore.table.pagination import PageRequest
from datastore.tenants import employees
from datastore.upkeep import name_backfill
from datastore.values import names
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.support import all_pages, written_before_search


def by_name(tenant: Tenant, prefix: str) -> list[Employee]:
    return all_pages(lambda request: employees.list_employees_by_name(tenant.table, prefix, request))


def test_index_organization__old_employees__found_by_name_and_listed_once(
    tenant: Tenant, client: DynamoDBClient
) -> None:
    staff = written_before_search(client, tenant.table, 3)
    assert by_name(tenant, "bulk") == []
    assert run(name_backfill.index_organization(tenant.table)) == 4  # and the admin
    assert by_name(tenant, "bulk") == staff  # "Bulk" / "Person 000" ... sort by last name
    assert run(name_backfill.index_organization(tenant.table)) == 4  # again: the same entries
    directory = run(employees.list_employees_by_name(tenant.table, "", PageRequest(first=10))).items
    assert sorted(e.emp_id for e in directory) == sorted([tenant.admin.emp_id, *(e.emp_id for e in staff)])


def test_index_employee__renamed_since_read__writes_only_the_current_name(
    tenant: Tenant, client: DynamoDBClient
) -> None:
    [emp] = written_before_search(client, tenant.table, 1)
    renamed = run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, first_name="Zed"))
    run(name_backfill.index_employee(tenant.table, emp))  # emp is version 1: the backfill re-reads
    current = set(names.prefixes(renamed.first_name, renamed.last_name))
    for prefix in set(names.prefixes(emp.first_name, emp.last_name)) | current:
        listed = [e for e in by_name(tenant, prefix) if e.emp_id == emp.emp_id]
        assert listed == ([renamed] if prefix in current else []), prefix
