"""createEmployee, updateEmployee, moveEmployee, terminateEmployee over HTTP."""

from __future__ import annotations

from typing import Any

from datastore import departments, employees
from graphql_api import ids
from tests.conftest import Tenant
from tests.graphql_api.conftest import Api

MOVE = """
mutation($input: MoveEmployeeInput!) {
  moveEmployee(input: $input) {
    employee { id version department { name } }
    fromDepartment { name headcount }
    toDepartment { name headcount }
  }
}"""

CREATE = """
mutation($input: CreateEmployeeInput!) {
  createEmployee(input: $input) { employee { id email role version } department { headcount } }
}"""


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


def test_move_employee__moves_and_returns_both_headcounts(api: Api, tenant: Tenant) -> None:
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    person = tenant.employee(eng)
    data = api.admin_of(tenant).data(
        MOVE,
        {"input": {"id": ids.encode("Employee", person.emp_id), "departmentId": ids.encode("Department", ops.dept_id)}},
    )["moveEmployee"]
    assert data["employee"]["department"] == {"name": "Ops"}
    assert data["employee"]["version"] == person.version + 1
    assert data["fromDepartment"] == {"name": "Eng", "headcount": 0}
    assert data["toDepartment"] == {"name": "Ops", "headcount": 1}
    stored = employees.get_employee(tenant.table, person.emp_id)
    assert stored is not None and stored.department_id == ops.dept_id


def test_move_employee__stale_version__is_conflict_with_current_version(api: Api, tenant: Tenant) -> None:
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    person = tenant.employee(eng)
    body = api.admin_of(tenant).query(
        MOVE,
        {
            "input": {
                "id": ids.encode("Employee", person.emp_id),
                "departmentId": ids.encode("Department", ops.dept_id),
                "expectedVersion": person.version + 5,
            }
        },
    )
    assert body["data"] == {"moveEmployee": None}
    assert codes(body) == ["CONFLICT"]
    assert body["errors"][0]["extensions"]["currentVersion"] == person.version
    eng_after = departments.get_department(tenant.table, eng.dept_id)
    assert eng_after is not None and eng_after.headcount == 1


def test_create_employee__as_employee__is_forbidden_and_writes_nothing(api: Api, tenant: Tenant) -> None:
    worker = tenant.employee()
    email = "new.hire@example.com"
    body = api.as_(worker).query(CREATE, {"input": {"email": email, "firstName": "N", "lastName": "H"}})
    assert codes(body) == ["FORBIDDEN"]
    assert employees.find_employee_id_by_email(tenant.table, email) is None


def test_create_employee__bad_email__names_the_input_field(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(CREATE, {"input": {"email": "nope", "firstName": "N", "lastName": "H"}})
    assert codes(body) == ["BAD_USER_INPUT"]
    assert body["errors"][0]["extensions"]["field"] == "input.email"
