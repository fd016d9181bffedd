"""Name entries: written in every employee transaction, listed by name, never stale or doubled."""

from __future__ import annotations

import pytest

from datastore.errors import StaleVersion
from datastore.kinds.entities import Employee, EmployeeStatus, Plan, Role
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.tenancy.scope import TenantScope
from datastore.tenants import employees, organizations
from datastore.values import names
from tests.blocking import run
from tests.conftest import Tenant, unique_domain
from tests.datastore.support import all_pages


def found_under(tenant: Tenant, prefix: str, emp_id: str) -> list[Employee]:
    listed = all_pages(lambda request: employees.list_employees_by_name(tenant.table, prefix, request))
    return [emp for emp in listed if emp.emp_id == emp_id]


def assert_entries_match(tenant: Tenant, current: Employee, *former_names: tuple[str, str]) -> None:
    """Under each prefix of its names, old or new: the current employee once, or nothing."""
    wanted = set(names.prefixes(current.first_name, current.last_name))
    every = wanted.union(*(names.prefixes(first, last) for first, last in former_names))
    for prefix in every:
        assert found_under(tenant, prefix, current.emp_id) == ([current] if prefix in wanted else []), prefix


def test_create_employee__entries_under_every_prefix_once(tenant: Tenant) -> None:
    emp = run(
        employees.create_employee(
            tenant.table,
            email=tenant.email("ali"),
            first_name="Ali",
            last_name="Alison",
            department_id=None,
            role=Role.EMPLOYEE,
        )
    )
    assert_entries_match(tenant, emp)
    assert len(names.prefixes("Ali", "Alison")) == 7


def test_update_employee__name_change__old_entries_gone_in_the_same_write(tenant: Tenant) -> None:
    emp = tenant.employee(tenant.department())
    renamed = run(
        employees.update_employee(tenant.table, emp.emp_id, expected_version=1, first_name="Åsa", last_name="Öberg")
    )
    assert_entries_match(tenant, renamed, (emp.first_name, emp.last_name))
    assert [e.emp_id for e in found_under(tenant, "asa", emp.emp_id)] == [emp.emp_id]


def test_update_employee__other_fields__entries_carry_the_new_values(tenant: Tenant) -> None:
    emp = tenant.employee()
    updated = run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, role=Role.MANAGER))
    assert_entries_match(tenant, updated)


def test_move_employee__entries_name_the_new_department(tenant: Tenant) -> None:
    emp, target = tenant.employee(tenant.department("A")), tenant.department("B")
    moved = run(employees.move_employee(tenant.table, emp.emp_id, target.dept_id)).employee
    assert moved.department_id == target.dept_id
    assert_entries_match(tenant, moved)


def test_terminate_employee__still_listed_inactive(tenant: Tenant) -> None:
    emp = tenant.employee(tenant.department())
    terminated = run(employees.terminate_employee(tenant.table, emp.emp_id))
    assert terminated.status is EmployeeStatus.INACTIVE
    assert_entries_match(tenant, terminated)


def test_failed_write__entries_unchanged(tenant: Tenant) -> None:
    emp = tenant.employee()
    with pytest.raises(StaleVersion):
        run(employees.update_employee(tenant.table, emp.emp_id, expected_version=7, last_name="Never"))
    assert_entries_match(tenant, emp, (emp.first_name, "Never"))


def test_create_organization__admin_is_in_the_directory(platform: Table) -> None:
    domain = unique_domain()
    org, admin = run(
        organizations.create_organization(
            platform,
            name="Named",
            plan=Plan.FREE,
            email_domains=[domain],
            admin_email=f"boss@{domain}",
            admin_first_name="Zoë",
            admin_last_name="Ng",
        )
    )
    table = platform.with_scope(TenantScope(org.org_id))
    page = run(employees.list_employees_by_name(table, "zo", PageRequest()))
    assert [e.emp_id for e in page.items] == [admin.emp_id]
    directory = run(employees.list_employees_by_name(table, "", PageRequest()))
    assert [e.emp_id for e in directory.items] == [admin.emp_id]


def test_list_employees_by_name__pages__exact_and_alphabetical(tenant: Tenant) -> None:
    people = [("Bo", "Ng"), ("Ann", "Ng Li"), ("Ann", "Nga"), ("Ng", "Zed"), ("Cy", "Ng")]
    made = [
        run(
            employees.create_employee(
                tenant.table,
                email=tenant.email(f"n{index}"),
                first_name=first,
                last_name=last,
                department_id=None,
                role=Role.EMPLOYEE,
            )
        )
        for index, (first, last) in enumerate(people)
    ]
    pages: list[list[tuple[str, str]]] = []
    request = PageRequest(first=2)
    while True:
        page = run(employees.list_employees_by_name(tenant.table, "ng", request))
        pages.append([(e.first_name, e.last_name) for e in page.items])
        if not page.has_next:
            break
        request = PageRequest(first=2, after=page.end_cursor)
    assert pages == [[("Bo", "Ng"), ("Cy", "Ng")], [("Ann", "Ng Li"), ("Ann", "Nga")], [("Ng", "Zed")]]
    assert len(made) == 5
