"""createEmployee, updateEmployee, moveEmployee, terminateEmployee over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from datastore.kinds.entities import Department, Role
from datastore.table.pagination import PageRequest
from datastore.tenants import departments, employees
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory, unique_domain
from tests.graphql_api.fixtures import Api
from tests.graphql_api.schema.mutations.documents import (
    CREATE_EMPLOYEE,
    TERMINATE_EMPLOYEE,
    UNKNOWN_ULID,
    UPDATE_EMPLOYEE,
    error,
    gid,
    manager_of,
    raw_id,
)

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
    stored = run(employees.get_employee(tenant.table, person.emp_id))
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
    eng_after = run(departments.get_department(tenant.table, eng.dept_id))
    assert eng_after is not None and eng_after.headcount == 1


def test_create_employee__as_employee__is_forbidden_and_writes_nothing(api: Api, tenant: Tenant) -> None:
    worker = tenant.employee()
    email = tenant.email("new.hire")
    body = api.as_(worker).query(CREATE, {"input": {"email": email, "firstName": "N", "lastName": "H"}})
    assert codes(body) == ["FORBIDDEN"]
    assert run(employees.find_employee_id_by_email(tenant.table, email)) is None


def test_create_employee__bad_email__names_the_input_field(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(CREATE, {"input": {"email": "nope", "firstName": "N", "lastName": "H"}})
    assert codes(body) == ["BAD_USER_INPUT"]
    assert body["errors"][0]["extensions"]["field"] == "input.email"


def headcount(tenant: Tenant, dept: Department) -> int:
    found = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert found is not None
    return found.headcount


# --- createEmployee ---------------------------------------------------------------------


def test_create_employee__writes_employee_membership_and_headcount(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    data = api.admin_of(tenant).data(
        CREATE_EMPLOYEE,
        {
            "input": {
                "email": f"Grace@{tenant.domain.upper()}",
                "firstName": "Grace",
                "lastName": "Hopper",
                "role": "MANAGER",
                "departmentId": gid(dept),
            }
        },
    )["createEmployee"]
    assert data["employee"]["email"] == tenant.email("grace")
    assert data["employee"]["role"] == "MANAGER"
    assert data["employee"]["status"] == "ACTIVE"
    assert data["employee"]["version"] == 1
    assert data["department"] == {"id": gid(dept), "headcount": 1}
    emp_id = raw_id(data["employee"]["id"])[0]
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("grace"))) == emp_id
    members = run(employees.list_department_employees(tenant.table, dept.dept_id, PageRequest(first=10)))
    assert [m.emp_id for m in members.items] == [emp_id]
    assert headcount(tenant, dept) == 1


def test_create_employee__taken_email__is_conflict_and_writes_nothing(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    taken = tenant.employee(dept)
    body = api.admin_of(tenant).query(
        CREATE_EMPLOYEE,
        {"input": {"email": taken.email.upper(), "firstName": "N", "lastName": "H", "departmentId": gid(dept)}},
    )
    assert error(body)["extensions"]["code"] == "CONFLICT"
    assert headcount(tenant, dept) == 1
    assert run(employees.find_employee_id_by_email(tenant.table, taken.email)) == taken.emp_id


def test_create_employee__email_held_by_another_tenant__same_bad_input_as_a_free_foreign_domain(
    api: Api, tenant: Tenant, make_tenant: TenantFactory
) -> None:
    theirs = make_tenant().employee()
    admin = api.admin_of(tenant)
    held = admin.query(CREATE_EMPLOYEE, {"input": {"email": theirs.email, "firstName": "N", "lastName": "H"}})
    free = admin.query(
        CREATE_EMPLOYEE, {"input": {"email": f"nobody@{unique_domain()}", "firstName": "N", "lastName": "H"}}
    )
    unowned_in_their_domain = admin.query(
        CREATE_EMPLOYEE, {"input": {"email": f"free.{theirs.email}", "firstName": "N", "lastName": "H"}}
    )
    assert error(held)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.email"}
    # Nothing tells a held address, a free one in their domain and a domain of nobody apart.
    assert error(held)["message"] == error(free)["message"] == error(unowned_in_their_domain)["message"]
    assert theirs.email not in error(held)["message"]
    assert run(employees.find_employee_id_by_email(tenant.table, theirs.email)) is None


def test_update_employee__email_in_another_tenants_domain__bad_input_and_nothing_changes(
    api: Api, tenant: Tenant, make_tenant: TenantFactory
) -> None:
    person = tenant.employee()
    theirs = make_tenant().employee()
    body = api.admin_of(tenant).query(
        UPDATE_EMPLOYEE, {"input": {"id": gid(person), "expectedVersion": person.version, "email": theirs.email}}
    )
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.email"}
    assert run(employees.find_employee_id_by_email(tenant.table, person.email)) == person.emp_id
    assert run(employees.get_employee(tenant.table, person.emp_id)) == person


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("firstName", "Eve\u202eevil"),
        ("lastName", "Null\u0000byte"),
        ("firstName", "\u001b[31mRed"),
        ("email", "a\u0000@x.example"),
    ],
    ids=["bidi-override", "nul", "ansi-escape", "nul-in-email"],
)
def test_create_employee__control_characters__bad_input_naming_the_field(
    api: Api, tenant: Tenant, field: str, value: str
) -> None:
    fields = {"email": tenant.email("clean"), "firstName": "F", "lastName": "L", field: value}
    body = api.admin_of(tenant).query(CREATE_EMPLOYEE, {"input": fields})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": f"input.{field}"}
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("clean"))) is None


@pytest.mark.parametrize(("field", "value"), [("firstName", " "), ("lastName", "x" * 101), ("email", "a@b@c.com")])
def test_create_employee__bad_field__names_it(api: Api, tenant: Tenant, field: str, value: str) -> None:
    fields = {"email": tenant.email("fresh.person"), "firstName": "F", "lastName": "L", field: value}
    body = api.admin_of(tenant).query(CREATE_EMPLOYEE, {"input": fields})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": f"input.{field}"}
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("fresh.person"))) is None


def test_create_employee__unknown_role__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(
        CREATE_EMPLOYEE, {"input": {"email": tenant.email("r"), "firstName": "F", "lastName": "L", "role": "CEO"}}
    )
    assert codes(body) == ["BAD_USER_INPUT"]
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("r"))) is None


def test_create_employee__department_id_of_another_type__not_found(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(
        CREATE_EMPLOYEE,
        {"input": {"email": tenant.email("t"), "firstName": "F", "lastName": "L", "departmentId": gid(tenant.admin)}},
    )
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("t"))) is None


def test_create_employee__as_manager__not_enough_permissions(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    body = api.as_(manager_of(tenant, dept)).query(
        CREATE_EMPLOYEE,
        {"input": {"email": tenant.email("m"), "firstName": "F", "lastName": "L", "departmentId": gid(dept)}},
    )
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert headcount(tenant, dept) == 1


# --- updateEmployee ---------------------------------------------------------------------


def test_update_employee__changes_fields_and_moves_the_email(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    person = tenant.employee(dept)
    data = api.admin_of(tenant).data(
        UPDATE_EMPLOYEE,
        {
            "input": {
                "id": gid(person),
                "expectedVersion": person.version,
                "email": tenant.email("new.mail"),
                "lastName": "Renamed",
                "role": "MANAGER",
            }
        },
    )["updateEmployee"]["employee"]
    assert data == {
        "id": gid(person),
        "email": tenant.email("new.mail"),
        "firstName": person.first_name,
        "lastName": "Renamed",
        "role": "MANAGER",
        "version": person.version + 1,
    }
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("new.mail"))) == person.emp_id
    assert run(employees.find_employee_id_by_email(tenant.table, person.email)) is None
    # The old address is free again, platform-wide.
    tenant.employee(email=person.email)
    member = run(employees.list_department_employees(tenant.table, dept.dept_id, PageRequest(first=10))).items
    assert [(m.email, m.last_name) for m in member] == [(tenant.email("new.mail"), "Renamed")]


def test_update_employee__stale_version__is_conflict_and_changes_nothing(api: Api, tenant: Tenant) -> None:
    person = tenant.employee()
    run(employees.update_employee(tenant.table, person.emp_id, expected_version=person.version, first_name="Once"))
    body = api.admin_of(tenant).query(
        UPDATE_EMPLOYEE, {"input": {"id": gid(person), "expectedVersion": person.version, "firstName": "Twice"}}
    )
    assert error(body)["extensions"] == {"code": "CONFLICT", "currentVersion": person.version + 1}
    stored = run(employees.get_employee(tenant.table, person.emp_id))
    assert stored is not None and (stored.first_name, stored.version) == ("Once", person.version + 1)


def test_update_employee__taken_email__is_conflict_and_changes_nothing(api: Api, tenant: Tenant) -> None:
    person, other = tenant.employee(), tenant.employee()
    body = api.admin_of(tenant).query(
        UPDATE_EMPLOYEE, {"input": {"id": gid(person), "expectedVersion": person.version, "email": other.email}}
    )
    assert error(body)["extensions"]["code"] == "CONFLICT"
    assert run(employees.get_employee(tenant.table, person.emp_id)) == person
    assert run(employees.find_employee_id_by_email(tenant.table, person.email)) == person.emp_id
    assert run(employees.find_employee_id_by_email(tenant.table, other.email)) == other.emp_id


def test_update_employee__bad_email__names_the_input_field(api: Api, tenant: Tenant) -> None:
    person = tenant.employee()
    body = api.admin_of(tenant).query(
        UPDATE_EMPLOYEE, {"input": {"id": gid(person), "expectedVersion": person.version, "email": "no-at-sign"}}
    )
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.email"}
    assert run(employees.get_employee(tenant.table, person.emp_id)) == person


@pytest.mark.parametrize("kind", ["unknown", "other tenant", "other type"])
def test_update_employee__not_found(api: Api, tenant: Tenant, make_tenant: TenantFactory, kind: str) -> None:
    target = {
        "unknown": lambda: ids.encode("Employee", UNKNOWN_ULID),
        "other tenant": lambda: gid(make_tenant().employee()),
        "other type": lambda: gid(tenant.department()),
    }[kind]()
    body = api.admin_of(tenant).query(
        UPDATE_EMPLOYEE, {"input": {"id": target, "expectedVersion": 1, "firstName": "X"}}
    )
    assert error(body)["extensions"]["code"] == "NOT_FOUND"


def test_update_employee__malformed_id__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(UPDATE_EMPLOYEE, {"input": {"id": "%%%", "expectedVersion": 1}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.id"}


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_update_employee__not_enough_permissions(api: Api, tenant: Tenant, role: Role) -> None:
    caller = tenant.employee(role=role)
    body = api.as_(caller).query(
        UPDATE_EMPLOYEE, {"input": {"id": gid(caller), "expectedVersion": caller.version, "role": "ADMIN"}}
    )
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert run(employees.get_employee(tenant.table, caller.emp_id)) == caller


# --- moveEmployee -----------------------------------------------------------------------


def test_move_employee__unknown_department__is_bad_user_input_and_moves_nothing(api: Api, tenant: Tenant) -> None:
    eng = tenant.department("Eng")
    person = tenant.employee(eng)
    body = api.admin_of(tenant).query(
        MOVE, {"input": {"id": gid(person), "departmentId": ids.encode("Department", UNKNOWN_ULID)}}
    )
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.departmentId"}
    assert run(employees.get_employee(tenant.table, person.emp_id)) == person
    assert headcount(tenant, eng) == 1


def test_move_employee__terminated__is_conflict(api: Api, tenant: Tenant) -> None:
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    gone = run(employees.terminate_employee(tenant.table, tenant.employee(eng).emp_id))
    body = api.admin_of(tenant).query(MOVE, {"input": {"id": gid(gone), "departmentId": gid(ops)}})
    assert error(body)["extensions"]["code"] == "CONFLICT"
    assert (headcount(tenant, eng), headcount(tenant, ops)) == (0, 0)


def test_move_employee__other_tenants_employee__not_found(api: Api, tenant: Tenant, make_tenant: TenantFactory) -> None:
    other = make_tenant()
    theirs_dept = other.department("Theirs")
    theirs = other.employee(theirs_dept)
    ops = tenant.department("Ops")
    body = api.admin_of(tenant).query(MOVE, {"input": {"id": gid(theirs), "departmentId": gid(ops)}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert run(employees.get_employee(other.table, theirs.emp_id)) == theirs
    assert headcount(tenant, ops) == 0


def test_move_employee__not_enough_permissions(api: Api, tenant: Tenant) -> None:
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    person = tenant.employee(eng)
    body = api.as_(manager_of(tenant, eng)).query(MOVE, {"input": {"id": gid(person), "departmentId": gid(ops)}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert run(employees.get_employee(tenant.table, person.emp_id)) == person


# --- terminateEmployee ------------------------------------------------------------------


def test_terminate_employee__inactive_and_out_of_the_headcount(api: Api, tenant: Tenant) -> None:
    eng = tenant.department("Eng")
    person, stays = tenant.employee(eng), tenant.employee(eng)
    data = api.admin_of(tenant).data(
        TERMINATE_EMPLOYEE, {"input": {"id": gid(person), "expectedVersion": person.version}}
    )["terminateEmployee"]
    assert data["employee"]["status"] == "INACTIVE"
    assert data["employee"]["terminatedAt"] is not None
    assert data["employee"]["version"] == person.version + 1
    assert data["department"] == {"id": gid(eng), "headcount": 1}
    members = run(employees.list_department_employees(tenant.table, eng.dept_id, PageRequest(first=10))).items
    assert [m.emp_id for m in members] == [stays.emp_id]


def test_terminate_employee__twice__is_conflict(api: Api, tenant: Tenant) -> None:
    eng = tenant.department("Eng")
    person = tenant.employee(eng)
    admin = api.admin_of(tenant)
    admin.data(TERMINATE_EMPLOYEE, {"input": {"id": gid(person)}})
    body = admin.query(TERMINATE_EMPLOYEE, {"input": {"id": gid(person)}})
    assert error(body)["extensions"]["code"] == "CONFLICT"
    assert headcount(tenant, eng) == 0


def test_terminate_employee__stale_version__is_conflict(api: Api, tenant: Tenant) -> None:
    eng = tenant.department("Eng")
    person = tenant.employee(eng)
    body = api.admin_of(tenant).query(
        TERMINATE_EMPLOYEE, {"input": {"id": gid(person), "expectedVersion": person.version - 1}}
    )
    assert error(body)["extensions"] == {"code": "CONFLICT", "currentVersion": person.version}
    assert run(employees.get_employee(tenant.table, person.emp_id)) == person
    assert headcount(tenant, eng) == 1


def test_terminate_employee__unknown__not_found(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(TERMINATE_EMPLOYEE, {"input": {"id": ids.encode("Employee", UNKNOWN_ULID)}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_terminate_employee__not_enough_permissions(api: Api, tenant: Tenant, role: Role) -> None:
    eng = tenant.department("Eng")
    person = tenant.employee(eng)
    body = api.as_(tenant.employee(role=role)).query(TERMINATE_EMPLOYEE, {"input": {"id": gid(person)}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert run(employees.get_employee(tenant.table, person.emp_id)) == person
    assert headcount(tenant, eng) == 1
