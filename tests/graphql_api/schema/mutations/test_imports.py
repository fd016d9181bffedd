"""importEmployees over HTTP: per-row results, idempotent re-runs, the row limit, roles.

The imports run on a server of their own whose deadline is a minute, not the session's 10 s:
an import of 100 rows is 100 transactions, and DynamoDB Local on a machine shared by several
suites can take longer than 10 s for them (bench/imports.py measures it). The deadline is not
what these tests test.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from datastore.aws.calls import CallLog
from datastore.kinds.entities import Role
from datastore.tenants import departments, employees
from graphql_api.app import create_app
from graphql_api.execution import ids
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant, unique_domain
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.live import serving, with_settings

IMPORT = """
mutation($input: ImportEmployeesInput!) {
  importEmployees(input: $input) {
    created unchanged failed
    results { index status employee { id email firstName role } error { code field message } }
  }
}"""


@pytest.fixture(scope="module")
def patient_http(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings) -> Iterator[httpx.Client]:
    settings = with_settings(api_settings, request_timeout_seconds=60.0)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield http


@pytest.fixture
def api(patient_http: httpx.Client, api_settings: ApiSettings) -> Api:
    return Api(patient_http, api_settings)


def rows(tenant: Tenant, count: int, *, prefix: str = "p", dept_id: str | None = None) -> list[dict[str, Any]]:
    return [
        {
            "email": tenant.email(f"{prefix}{i}"),
            "firstName": f"F{i}",
            "lastName": f"L{i}",
            **({} if dept_id is None else {"departmentId": ids.encode("Department", dept_id)}),
        }
        for i in range(count)
    ]


def run_import(client: GraphQLClient, given: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The payload and the response's cost extension."""
    body = client.query(IMPORT, {"input": {"rows": given}})
    assert "errors" not in body, body["errors"]
    payload: dict[str, Any] = body["data"]["importEmployees"]
    cost: dict[str, Any] = body["extensions"]["cost"]
    return payload, cost


def test_import_employees__100_rows__all_created(api: Api, tenant: Tenant) -> None:
    payload, cost = run_import(api.admin_of(tenant), rows(tenant, 100))
    assert (payload["created"], payload["unchanged"], payload["failed"]) == (100, 0, 0)
    assert [r["index"] for r in payload["results"]] == list(range(100))
    assert {r["status"] for r in payload["results"]} == {"CREATED"}
    assert payload["results"][7]["employee"]["email"] == tenant.email("p7")
    # The caller check's one BatchGetItem, one lookup of the 100 emails (no pointer found, so
    # no second), one transaction per row.
    assert (cost["requests"]["BatchGetItem"], cost["requests"]["TransactWriteItems"]) == (2, 100)
    for i in (0, 50, 99):
        assert run(employees.find_employee_id_by_email(tenant.table, tenant.email(f"p{i}"))) is not None


def test_import_employees__rerun__all_unchanged_without_writes(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    given = rows(tenant, 100)
    first, _ = run_import(admin, given)
    again, cost = run_import(admin, given)
    assert (again["created"], again["unchanged"], again["failed"]) == (0, 100, 0)
    assert [r["employee"]["id"] for r in again["results"]] == [r["employee"]["id"] for r in first["results"]]
    assert "TransactWriteItems" not in cost["requests"]
    # The caller check, then the lookup of 100 emails: their pointers, then their employees.
    assert cost["requests"]["BatchGetItem"] == 3


def test_import_employees__after_partial_failure__rerun_finishes_the_job(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    given = rows(tenant, 5)
    run_import(admin, given[:2])
    payload, cost = run_import(admin, given)
    assert [r["status"] for r in payload["results"]] == ["UNCHANGED"] * 2 + ["CREATED"] * 3
    assert cost["requests"]["TransactWriteItems"] == 3


def test_import_employees__mixed_rows__per_row_codes_and_fields(api: Api, tenant: Tenant) -> None:
    dept = tenant.department()
    given = [
        {"email": tenant.email("good0"), "firstName": "Good", "lastName": "Zero"},
        {"email": f"x@{unique_domain()}", "firstName": "Other", "lastName": "Domain"},
        {"email": tenant.email("good0"), "firstName": "Good", "lastName": "Again"},
        {
            "email": tenant.email("nodept"),
            "firstName": "No",
            "lastName": "Dept",
            "departmentId": ids.encode("Department", "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        },
        {"email": tenant.email("ctrl"), "firstName": "Bad\x1b[31m", "lastName": "Chars"},
        {"email": "not-an-email", "firstName": "No", "lastName": "Email"},
        {
            "email": tenant.email("good1"),
            "firstName": "Good",
            "lastName": "One",
            "role": "MANAGER",
            "departmentId": ids.encode("Department", dept.dept_id),
        },
    ]
    payload, _ = run_import(api.admin_of(tenant), given)
    statuses = [r["status"] for r in payload["results"]]
    assert statuses == ["CREATED", "FAILED", "FAILED", "FAILED", "FAILED", "FAILED", "CREATED"]
    errors = {r["index"]: r["error"] for r in payload["results"] if r["error"] is not None}
    assert {i: (e["code"], e["field"]) for i, e in errors.items()} == {
        1: ("BAD_USER_INPUT", "input.rows.1.email"),
        2: ("BAD_USER_INPUT", "input.rows.2.email"),
        3: ("BAD_USER_INPUT", "input.rows.3.departmentId"),
        4: ("BAD_USER_INPUT", "input.rows.4.firstName"),
        5: ("BAD_USER_INPUT", "input.rows.5.email"),
    }
    assert errors[2]["message"] == "repeats the email of an earlier row"
    assert (payload["created"], payload["unchanged"], payload["failed"]) == (2, 0, 5)
    # Bad rows wrote nothing: no employee, and the department counts only the good row.
    for local in ("nodept", "ctrl"):
        assert run(employees.find_employee_id_by_email(tenant.table, tenant.email(local))) is None
    found = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert found is not None and found.headcount == 1


def test_import_employees__email_with_other_data__conflict_on_email(api: Api, tenant: Tenant) -> None:
    existing = tenant.employee(email=tenant.email("taken"))
    given = [{"email": existing.email, "firstName": "Someone", "lastName": "Else"}]
    payload, cost = run_import(api.admin_of(tenant), given)
    error = payload["results"][0]["error"]
    assert (error["code"], error["field"]) == ("CONFLICT", "input.rows.0.email")
    assert "firstName" in error["message"] and "lastName" in error["message"]
    assert "TransactWriteItems" not in cost["requests"]


def test_import_employees__terminated_employee_same_data__conflict(api: Api, tenant: Tenant) -> None:
    person = tenant.employee()
    run(employees.terminate_employee(tenant.table, person.emp_id))
    given = [{"email": person.email, "firstName": person.first_name, "lastName": person.last_name}]
    payload, _ = run_import(api.admin_of(tenant), given)
    assert payload["results"][0]["error"]["code"] == "CONFLICT"
    assert "INACTIVE" in payload["results"][0]["error"]["message"]


def test_import_employees__101_rows__refused_without_calls(api: Api, tenant: Tenant, call_log: CallLog) -> None:
    body = api.admin_of(tenant).query(IMPORT, {"input": {"rows": rows(tenant, 101)}})
    assert body.get("data") is None
    (error,) = body["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.rows", "limit": "rows", "maxRows": 100}
    assert call_log.count() == 0
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("p0"))) is None


def test_import_employees__100_rows__at_the_bound_accepted(api: Api, tenant: Tenant) -> None:
    payload, _ = run_import(api.admin_of(tenant), rows(tenant, 100, prefix="b"))
    assert payload["created"] == 100


def test_import_employees__employee_and_manager__forbidden(api: Api, tenant: Tenant) -> None:
    for role in (Role.EMPLOYEE, Role.MANAGER):
        body = api.as_(tenant.employee(role=role)).query(IMPORT, {"input": {"rows": rows(tenant, 1)}})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["FORBIDDEN"]
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("p0"))) is None


def test_import_employees__concurrent_reruns__each_row_created_once(api: Api, tenant: Tenant) -> None:
    dept = tenant.department()
    given = rows(tenant, 40, dept_id=dept.dept_id)
    admin = api.admin_of(tenant)
    with ThreadPoolExecutor(4) as pool:
        payloads = [p for p, _ in pool.map(lambda _: run_import(admin, given), range(4))]
    assert sum(p["failed"] for p in payloads) == 0
    assert sum(p["created"] for p in payloads) == 40
    for index in range(40):
        assert len({p["results"][index]["employee"]["id"] for p in payloads}) == 1
    found = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert found is not None and found.headcount == 40


def test_import_employees__only_invalid_rows__no_lookup_and_no_write(api: Api, tenant: Tenant) -> None:
    given = [
        {"email": "nope", "firstName": "A", "lastName": "B"},
        {"email": tenant.email("c"), "firstName": "", "lastName": "B"},
    ]
    payload, cost = run_import(api.admin_of(tenant), given)
    assert [(r["error"]["code"], r["error"]["field"]) for r in payload["results"]] == [
        ("BAD_USER_INPUT", "input.rows.0.email"),
        ("BAD_USER_INPUT", "input.rows.1.firstName"),
    ]
    # Only the caller check's read (a mutation waits for it before any resolver runs).
    assert cost["requests"] == {"BatchGetItem": 1}
