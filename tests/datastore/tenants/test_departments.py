from __future__ import annotations

import pytest

from datastore.aws import calls
from datastore.errors import InvalidInput, NotFound
from datastore.kinds import layout
from datastore.table import by_id
from datastore.table.pagination import PageRequest
from datastore.tenants import departments, employees
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant


def test_get_department__ap6__one_get_item(tenant: Tenant) -> None:
    dept = tenant.department("Sales")
    with calls.listening() as log:
        found = run(departments.get_department(tenant.table, dept.dept_id))
    assert found == dept
    assert log.operations() == ["GetItem"]


def test_get_department__unknown_id__none(tenant: Tenant) -> None:
    assert run(departments.get_department(tenant.table, ids.new_id())) is None


@pytest.mark.parametrize("descending", [False, True])
def test_list_departments__ap5__one_query_in_creation_order(tenant: Tenant, descending: bool) -> None:
    created = [tenant.department(name) for name in ("Sales", "Engineering", "Finance")]
    tenant.employee(created[0])  # Employees share the partition; they must not be listed.
    with calls.listening() as log:
        page = run(departments.list_departments(tenant.table, PageRequest(descending=descending)))
    assert [d.dept_id for d in page.items] == [d.dept_id for d in (created[::-1] if descending else created)]
    assert page.items[0 if not descending else 2].headcount == 1
    assert not page.has_next
    assert log.operations() == ["Query"]
    assert "FilterExpression" not in log.calls[0].params


def test_departments_by_id__batch_in_order_with_misses(tenant: Tenant) -> None:
    a, b = tenant.department("A"), tenant.department("B")
    with calls.listening() as log:
        found = run(by_id.get_many(tenant.table, layout.DEPARTMENT, [b.dept_id, ids.new_id(), a.dept_id]))
    assert found == [b, None, a]
    assert log.operations() == ["BatchGetItem"]


def test_create_department__with_active_manager__stored(tenant: Tenant) -> None:
    dept = run(departments.create_department(tenant.table, name=" Ops ", manager_id=tenant.admin.emp_id))
    assert (dept.name, dept.manager_id, dept.headcount) == ("Ops", tenant.admin.emp_id, 0)
    assert run(departments.get_department(tenant.table, dept.dept_id)) == dept


def test_create_department__unknown_manager__invalid_input_and_nothing_written(tenant: Tenant) -> None:
    with pytest.raises(InvalidInput) as raised:
        run(departments.create_department(tenant.table, name="Ghosts", manager_id=ids.new_id()))
    assert raised.value.field == "manager_id"
    assert list(run(departments.list_departments(tenant.table, PageRequest())).items) == []


def test_create_department__inactive_manager__invalid_input(tenant: Tenant) -> None:
    leaver = tenant.employee()
    run(employees.terminate_employee(tenant.table, leaver.emp_id))
    with pytest.raises(InvalidInput, match="manager_id"):
        run(departments.create_department(tenant.table, name="X", manager_id=leaver.emp_id))


def test_create_department__blank_name__invalid_input_and_no_call(tenant: Tenant) -> None:
    with calls.listening() as log, pytest.raises(InvalidInput) as raised:
        run(departments.create_department(tenant.table, name="  "))
    assert raised.value.field == "name"
    assert log.operations() == []


def test_update_department__rename_and_manager__keeps_headcount(tenant: Tenant) -> None:
    dept = tenant.department("Old")
    tenant.employee(dept)
    updated = run(departments.update_department(tenant.table, dept.dept_id, name="New", manager_id=tenant.admin.emp_id))
    assert (updated.name, updated.manager_id, updated.headcount) == ("New", tenant.admin.emp_id, 1)
    cleared = run(departments.update_department(tenant.table, dept.dept_id, manager_id=departments.NO_MANAGER))
    assert (cleared.name, cleared.manager_id, cleared.headcount) == ("New", None, 1)


def test_update_department__unknown_id__not_found_and_nothing_written(tenant: Tenant) -> None:
    unknown = ids.new_id()
    with pytest.raises(NotFound):
        run(departments.update_department(tenant.table, unknown, name="X"))
    assert run(departments.get_department(tenant.table, unknown, consistent=True)) is None


def test_update_department__unknown_manager__invalid_input_and_nothing_changed(tenant: Tenant) -> None:
    dept = tenant.department("Keep")
    with pytest.raises(InvalidInput, match="manager_id"):
        run(departments.update_department(tenant.table, dept.dept_id, name="Changed", manager_id=ids.new_id()))
    assert run(departments.get_department(tenant.table, dept.dept_id, consistent=True)) == dept


def test_update_department__nothing_to_change__invalid_input_and_no_call(tenant: Tenant) -> None:
    dept = tenant.department()
    with calls.listening() as log, pytest.raises(InvalidInput):
        run(departments.update_department(tenant.table, dept.dept_id))
    assert log.operations() == []
