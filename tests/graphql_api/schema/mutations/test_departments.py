"""createDepartment, updateDepartment over HTTP."""

from __future__ import annotations

import pytest

from datastore.kinds.entities import Role
from datastore.table.pagination import PageRequest
from datastore.tenants import departments
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.schema.mutations.documents import (
    CREATE_DEPARTMENT,
    UNKNOWN_ULID,
    UPDATE_DEPARTMENT,
    audit_actions,
    error,
    gid,
    raw_id,
)


def department_names(tenant: Tenant) -> list[str]:
    return [d.name for d in run(departments.list_departments(tenant.table, PageRequest(first=100))).items]


# --- createDepartment -------------------------------------------------------------------


def test_create_department__writes_it_with_its_manager(api: Api, tenant: Tenant) -> None:
    boss = tenant.employee(role=Role.MANAGER)
    data = api.admin_of(tenant).data(CREATE_DEPARTMENT, {"input": {"name": "  Research ", "managerId": gid(boss)}})[
        "createDepartment"
    ]["department"]
    assert data["name"] == "Research"
    assert data["headcount"] == 0
    assert data["manager"] == {"id": gid(boss)}
    stored = run(departments.get_department(tenant.table, raw_id(data["id"])[0]))
    assert stored is not None and stored.name == "Research" and stored.manager_id == boss.emp_id
    assert audit_actions(tenant)[0] == "department.create"


@pytest.mark.parametrize(("name", "reason"), [("   ", "must not be blank"), ("x" * 101, "at most 100 characters")])
def test_create_department__bad_name__is_bad_user_input(api: Api, tenant: Tenant, name: str, reason: str) -> None:
    found = error(api.admin_of(tenant).query(CREATE_DEPARTMENT, {"input": {"name": name}}))
    assert found["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.name"}
    assert reason in found["message"]
    assert department_names(tenant) == []


def test_create_department__name_of_100_characters__is_accepted(api: Api, tenant: Tenant) -> None:
    api.admin_of(tenant).data(CREATE_DEPARTMENT, {"input": {"name": "x" * 100}})
    assert department_names(tenant) == ["x" * 100]


def test_create_department__unknown_manager__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(
        CREATE_DEPARTMENT, {"input": {"name": "R", "managerId": ids.encode("Employee", UNKNOWN_ULID)}}
    )
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.managerId"}
    assert department_names(tenant) == []


def test_create_department__manager_of_another_tenant__is_bad_user_input(
    api: Api, tenant: Tenant, make_tenant: TenantFactory
) -> None:
    stranger = make_tenant().employee()
    body = api.admin_of(tenant).query(CREATE_DEPARTMENT, {"input": {"name": "R", "managerId": gid(stranger)}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.managerId"}
    assert department_names(tenant) == []


def test_create_department__manager_id_of_another_type__not_found(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    body = api.admin_of(tenant).query(CREATE_DEPARTMENT, {"input": {"name": "R", "managerId": gid(dept)}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert department_names(tenant) == ["Eng"]


def test_create_department__malformed_manager_id__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(CREATE_DEPARTMENT, {"input": {"name": "R", "managerId": "!!"}})
    assert error(body)["extensions"]["field"] == "input.managerId"
    assert department_names(tenant) == []


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_create_department__not_enough_permissions(api: Api, tenant: Tenant, role: Role) -> None:
    body = api.as_(tenant.employee(role=role)).query(CREATE_DEPARTMENT, {"input": {"name": "R"}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert department_names(tenant) == []


def test_create_department__platform_operator__not_enough_permissions(api: Api) -> None:
    body = api.platform.query(CREATE_DEPARTMENT, {"input": {"name": "R"}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"


def test_create_department__anonymous__unauthenticated(anonymous: GraphQLClient) -> None:
    body = anonymous.query(CREATE_DEPARTMENT, {"input": {"name": "R"}})
    assert error(body)["extensions"]["code"] == "UNAUTHENTICATED"


# --- updateDepartment -------------------------------------------------------------------


def test_update_department__renames_and_sets_manager(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    tenant.employee(dept)
    boss = tenant.employee(dept, role=Role.MANAGER)
    data = api.admin_of(tenant).data(
        UPDATE_DEPARTMENT, {"input": {"id": gid(dept), "name": "Engineering", "managerId": gid(boss)}}
    )["updateDepartment"]["department"]
    assert data == {"id": gid(dept), "name": "Engineering", "headcount": 2, "manager": {"id": gid(boss)}}
    stored = run(departments.get_department(tenant.table, dept.dept_id))
    assert stored is not None and (stored.name, stored.manager_id, stored.headcount) == ("Engineering", boss.emp_id, 2)


def test_update_department__clear_manager(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    boss = tenant.employee(dept, role=Role.MANAGER)
    run(departments.update_department(tenant.table, dept.dept_id, manager_id=boss.emp_id))
    data = api.admin_of(tenant).data(UPDATE_DEPARTMENT, {"input": {"id": gid(dept), "clearManager": True}})
    assert data["updateDepartment"]["department"]["manager"] is None
    stored = run(departments.get_department(tenant.table, dept.dept_id))
    assert stored is not None and stored.manager_id is None


def test_update_department__nothing_to_change__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    body = api.admin_of(tenant).query(UPDATE_DEPARTMENT, {"input": {"id": gid(dept)}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input"}


def test_update_department__blank_name__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    body = api.admin_of(tenant).query(UPDATE_DEPARTMENT, {"input": {"id": gid(dept), "name": " "}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.name"}
    assert department_names(tenant) == ["Eng"]


def test_update_department__inactive_manager__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    from datastore.tenants import employees

    dept = tenant.department("Eng")
    gone = run(employees.terminate_employee(tenant.table, tenant.employee(dept).emp_id))
    body = api.admin_of(tenant).query(UPDATE_DEPARTMENT, {"input": {"id": gid(dept), "managerId": gid(gone)}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.managerId"}
    stored = run(departments.get_department(tenant.table, dept.dept_id))
    assert stored is not None and stored.manager_id is None


def test_update_department__unknown_id__not_found(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(
        UPDATE_DEPARTMENT, {"input": {"id": ids.encode("Department", UNKNOWN_ULID), "name": "X"}}
    )
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert department_names(tenant) == []


def test_update_department__other_tenants_id__not_found(api: Api, tenant: Tenant, make_tenant: TenantFactory) -> None:
    other = make_tenant()
    theirs = other.department("Theirs")
    body = api.admin_of(tenant).query(UPDATE_DEPARTMENT, {"input": {"id": gid(theirs), "name": "Mine"}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert department_names(other) == ["Theirs"]
    assert department_names(tenant) == []


def test_update_department__id_of_another_type__not_found(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(UPDATE_DEPARTMENT, {"input": {"id": gid(tenant.admin), "name": "X"}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"


def test_update_department__malformed_id__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(UPDATE_DEPARTMENT, {"input": {"id": "not-an-id", "name": "X"}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.id"}


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_update_department__not_enough_permissions(api: Api, tenant: Tenant, role: Role) -> None:
    dept = tenant.department("Eng")
    caller = tenant.employee(dept, role=role)
    if role is Role.MANAGER:
        run(departments.update_department(tenant.table, dept.dept_id, manager_id=caller.emp_id))
    body = api.as_(caller).query(UPDATE_DEPARTMENT, {"input": {"id": gid(dept), "name": "Mine"}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert department_names(tenant) == ["Eng"]
