from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.aws import calls
from datastore.errors import Conflict, InvalidInput, NotFound, StaleVersion
from datastore.kinds import layout
from datastore.kinds.entities import Employee, EmployeeStatus, Role
from datastore.signin import identities
from datastore.table.pagination import PageRequest
from datastore.tenancy.scope import SignInScope
from datastore.tenants import departments, employees
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory, unique_domain
from tests.datastore.support import BulkEmployees, employee_items, gsi_order, raw_employees, write_items

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


def headcount(tenant: Tenant, dept_id: str) -> int:
    dept = run(departments.get_department(tenant.table, dept_id, consistent=True))
    assert dept is not None
    return dept.headcount


def members(tenant: Tenant, dept_id: str) -> list[str]:
    page = run(employees.list_department_employees(tenant.table, dept_id, PageRequest(first=100)))
    return [emp.emp_id for emp in page.items]


# --- reads -------------------------------------------------------------------------------


def test_get_employee__ap2__one_get_item(tenant: Tenant) -> None:
    emp = tenant.employee(tenant.department())
    with calls.listening() as log:
        found = run(employees.get_employee(tenant.table, emp.emp_id))
    assert found == emp
    assert log.operations() == ["GetItem"]


def test_get_employee__unknown_id__none(tenant: Tenant) -> None:
    assert run(employees.get_employee(tenant.table, ids.new_id())) is None


@pytest.mark.parametrize("descending", [False, True], ids=["oldest_first", "newest_first"])
def test_list_employees__ap3__one_query_on_gsi1_by_hire_date(
    tenant: Tenant, bulk_employees: BulkEmployees, descending: bool
) -> None:
    hired = run(
        employees.create_employee(
            tenant.table,
            email=tenant.email(f"mid{ids.new_id().lower()}"),
            first_name="M",
            last_name="Id",
            department_id=None,
            role=Role.EMPLOYEE,
            hired_at=datetime(2020, 1, 1, 0, 1, 30, tzinfo=UTC),
        )
    )
    everyone = sorted([tenant.admin, hired, *bulk_employees(tenant.org_id, 4)], key=gsi_order)
    with calls.listening() as log:
        page = run(employees.list_employees(tenant.table, PageRequest(descending=descending)))
    assert list(page.items) == (everyone[::-1] if descending else everyone)
    assert log.operations() == ["Query"]
    assert log.calls[0].params["IndexName"] == "GSI1"
    assert log.calls[0].params["ScanIndexForward"] is (not descending)


def test_list_employees__includes_the_inactive(tenant: Tenant) -> None:
    emp = tenant.employee()
    run(employees.terminate_employee(tenant.table, emp.emp_id))
    listed = {e.emp_id: e for e in run(employees.list_employees(tenant.table, PageRequest())).items}
    assert listed[emp.emp_id].status is EmployeeStatus.INACTIVE


def test_list_department_employees__ap7__one_query_of_active_members(tenant: Tenant) -> None:
    dept, other = tenant.department("A"), tenant.department("B")
    staying = [tenant.employee(dept) for _ in range(3)]
    tenant.employee(other)
    leaver = tenant.employee(dept)
    run(employees.terminate_employee(tenant.table, leaver.emp_id))
    with calls.listening() as log:
        page = run(employees.list_department_employees(tenant.table, dept.dept_id, PageRequest()))
    assert list(page.items) == sorted(staying, key=lambda e: e.emp_id)
    assert log.operations() == ["Query"]
    assert "IndexName" not in log.calls[0].params


def test_find_employee_id_by_email__ap4_in_tenant__one_get_item(tenant: Tenant) -> None:
    emp = tenant.employee()
    with calls.listening() as log:
        found = run(employees.find_employee_id_by_email(tenant.table, emp.email.upper()))
    assert found == emp.emp_id
    assert log.operations() == ["GetItem"]
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email(f"x{ids.new_id().lower()}"))) is None


def test_find_employee_id_by_email__wrong_shape__invalid_input_and_no_call(tenant: Tenant) -> None:
    with calls.listening() as log, pytest.raises(InvalidInput):
        run(employees.find_employee_id_by_email(tenant.table, "nobody@"))
    assert log.operations() == []


# --- create ------------------------------------------------------------------------------


def test_create_employee__one_transaction_counts_the_department(tenant: Tenant) -> None:
    dept = tenant.department()
    with calls.listening() as log:
        emp = run(
            employees.create_employee(
                tenant.table,
                email=f"  New.Person@{tenant.domain.upper()} ".strip(),
                first_name="New",
                last_name="Person",
                department_id=dept.dept_id,
                role=Role.MANAGER,
            )
        )
    assert log.operations() == ["TransactWriteItems"]
    assert emp.email == tenant.email("new.person")
    assert (emp.status, emp.version, emp.terminated_at) == (EmployeeStatus.ACTIVE, 1, None)
    assert run(employees.get_employee(tenant.table, emp.emp_id)) == emp
    assert headcount(tenant, dept.dept_id) == 1
    assert members(tenant, dept.dept_id) == [emp.emp_id]


def test_create_employee__email_outside_own_domains__one_message_whoever_holds_it(
    tenant: Tenant, make_tenant: TenantFactory
) -> None:
    other = make_tenant()
    theirs = other.employee()
    reasons: dict[str, str] = {}
    cases = {
        "held-by-another-org": theirs.email,
        "free-in-another-orgs-domain": f"free.{theirs.email}",
        "domain-of-nobody": f"x@{unique_domain()}",
    }
    for case, email in cases.items():
        with pytest.raises(InvalidInput) as raised:
            run(
                employees.create_employee(
                    tenant.table, email=email, first_name="N", last_name="H", department_id=None, role=Role.EMPLOYEE
                )
            )
        assert raised.value.field == "email", case
        reasons[case] = raised.value.reason
        assert run(employees.find_employee_id_by_email(tenant.table, email)) is None
    assert len(set(reasons.values())) == 1, reasons
    assert theirs.email not in next(iter(reasons.values()))
    identity = run(identities.find_identity(tenant.table.with_scope(SignInScope()), theirs.email))
    assert identity is not None and identity.org_id == other.org_id
    assert [e.emp_id for e in run(employees.list_employees(tenant.table, PageRequest())).items] == [tenant.admin.emp_id]


def test_create_employee__domain_check_is_in_the_transaction(tenant: Tenant) -> None:
    with calls.listening() as log:
        tenant.employee()
    (transaction,) = log.calls
    checks = [item["ConditionCheck"] for item in transaction.params["TransactItems"] if "ConditionCheck" in item]
    assert [c["Key"] for c in checks] == [layout.EMAIL_DOMAIN.key_at(tenant.domain).wire()]
    assert checks[0]["ExpressionAttributeValues"] == {":org": {"S": tenant.org_id}}
    # A failed check must not bring another organisation's marker back, even into memory.
    assert "ReturnValuesOnConditionCheckFailure" not in checks[0]


def test_create_employee__taken_email__conflict_and_nothing_written(tenant: Tenant) -> None:
    dept = tenant.department()
    taken = tenant.employee(dept)
    with pytest.raises(Conflict, match="already in use"):
        run(
            employees.create_employee(
                tenant.table,
                email=taken.email.upper(),
                first_name="Dup",
                last_name="Licate",
                department_id=dept.dept_id,
                role=Role.EMPLOYEE,
            )
        )
    assert headcount(tenant, dept.dept_id) == 1
    assert members(tenant, dept.dept_id) == [taken.emp_id]
    assert {e.emp_id for e in run(employees.list_employees(tenant.table, PageRequest())).items} == {
        tenant.admin.emp_id,
        taken.emp_id,
    }


def test_create_employee__unknown_department__invalid_input_and_nothing_written(tenant: Tenant) -> None:
    email = tenant.email(f"lost{ids.new_id().lower()}")
    with pytest.raises(InvalidInput) as raised:
        run(
            employees.create_employee(
                tenant.table,
                email=email,
                first_name="Lo",
                last_name="St",
                department_id=ids.new_id(),
                role=Role.EMPLOYEE,
            )
        )
    assert raised.value.field == "department_id"
    assert run(employees.find_employee_id_by_email(tenant.table, email)) is None
    assert run(identities.find_identity(tenant.table.with_scope(SignInScope()), email)) is None
    assert [e.emp_id for e in run(employees.list_employees(tenant.table, PageRequest())).items] == [tenant.admin.emp_id]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"email": "not an email"}, "email"),
        ({"email": "two@@example.com"}, "email"),
        ({"first_name": " "}, "first_name"),
        ({"last_name": "x" * 101}, "last_name"),
    ],
)
def test_create_employee__bad_input__invalid_input_and_no_call(
    tenant: Tenant, changes: dict[str, str], field: str
) -> None:
    arguments: dict[str, str | None] = {
        "email": tenant.email(f"ok{ids.new_id().lower()}"),
        "first_name": "A",
        "last_name": "B",
        "department_id": None,
    }
    arguments.update(changes)
    with calls.listening() as log, pytest.raises(InvalidInput) as raised:
        run(employees.create_employee(tenant.table, role=Role.EMPLOYEE, **arguments))  # type: ignore[arg-type]
    assert raised.value.field == field
    assert log.operations() == []


# --- update ------------------------------------------------------------------------------


def test_update_employee__fields_and_version__membership_copy_follows(tenant: Tenant) -> None:
    dept = tenant.department()
    emp = tenant.employee(dept)
    updated = run(
        employees.update_employee(tenant.table, emp.emp_id, expected_version=1, first_name="Renamed", role=Role.MANAGER)
    )
    assert (updated.first_name, updated.role, updated.version) == ("Renamed", Role.MANAGER, 2)
    assert run(employees.get_employee(tenant.table, emp.emp_id)) == updated
    listed = run(employees.list_department_employees(tenant.table, dept.dept_id, PageRequest())).items
    assert list(listed) == [updated]


def test_update_employee__email_outside_own_domains__invalid_input_and_nothing_changes(
    tenant: Tenant, make_tenant: TenantFactory
) -> None:
    emp = tenant.employee()
    theirs = make_tenant().employee()
    for email in (theirs.email, f"free.{theirs.email}", f"x@{unique_domain()}"):
        with pytest.raises(InvalidInput, match="your organisation's email domains") as raised:
            run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, email=email))
        assert raised.value.field == "email"
    assert run(employees.get_employee(tenant.table, emp.emp_id, consistent=True)) == emp
    assert run(employees.find_employee_id_by_email(tenant.table, emp.email)) == emp.emp_id


def test_update_employee__new_email__frees_the_old_one(tenant: Tenant) -> None:
    emp = tenant.employee()
    new_email = tenant.email(f"new{ids.new_id().lower()}")
    run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, email=new_email))
    assert run(employees.find_employee_id_by_email(tenant.table, new_email)) == emp.emp_id
    assert run(employees.find_employee_id_by_email(tenant.table, emp.email)) is None
    reuse = tenant.employee(email=emp.email)
    assert run(employees.find_employee_id_by_email(tenant.table, emp.email)) == reuse.emp_id


def test_update_employee__taken_email__conflict_and_nothing_changed(tenant: Tenant) -> None:
    emp, other = tenant.employee(), tenant.employee()
    with pytest.raises(Conflict, match="already in use"):
        run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, email=other.email, first_name="Z"))
    assert run(employees.get_employee(tenant.table, emp.emp_id, consistent=True)) == emp
    assert run(employees.find_employee_id_by_email(tenant.table, emp.email)) == emp.emp_id
    assert run(employees.find_employee_id_by_email(tenant.table, other.email)) == other.emp_id


def test_update_employee__stale_version__changes_nothing(tenant: Tenant) -> None:
    emp = tenant.employee()
    current = run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, first_name="Second"))
    with calls.listening() as log, pytest.raises(StaleVersion) as raised:
        run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, first_name="Lost"))
    assert raised.value.current_version == 2
    assert not WRITES & set(log.operations())
    assert run(employees.get_employee(tenant.table, emp.emp_id, consistent=True)) == current


def test_update_employee__unknown_id__not_found(tenant: Tenant) -> None:
    with pytest.raises(NotFound):
        run(employees.update_employee(tenant.table, ids.new_id(), expected_version=1, first_name="X"))


def test_update_employee__bad_email__invalid_input_and_no_write(tenant: Tenant) -> None:
    emp = tenant.employee()
    with calls.listening() as log, pytest.raises(InvalidInput):
        run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, email="nope"))
    assert not WRITES & set(log.operations())


# --- move and terminate --------------------------------------------------------------------


def test_move_employee__both_counters_and_memberships_in_one_transaction(tenant: Tenant) -> None:
    source, target = tenant.department("From"), tenant.department("To")
    emp = tenant.employee(source)
    with calls.listening() as log:
        move = run(employees.move_employee(tenant.table, emp.emp_id, target.dept_id, expected_version=1))
    moved = move.employee
    assert [op for op in log.operations() if op in WRITES] == ["TransactWriteItems"]
    assert (moved.department_id, moved.version, move.from_department_id) == (target.dept_id, 2, source.dept_id)
    assert (headcount(tenant, source.dept_id), headcount(tenant, target.dept_id)) == (0, 1)
    assert (members(tenant, source.dept_id), members(tenant, target.dept_id)) == ([], [emp.emp_id])
    assert run(employees.get_employee(tenant.table, emp.emp_id)) == moved


def test_move_employee__without_department__joins_the_target(tenant: Tenant) -> None:
    target = tenant.department()
    move = run(employees.move_employee(tenant.table, tenant.admin.emp_id, target.dept_id))
    assert (move.employee.department_id, move.from_department_id) == (target.dept_id, None)
    assert headcount(tenant, target.dept_id) == 1


def test_move_employee__same_department__no_write(tenant: Tenant) -> None:
    dept = tenant.department()
    emp = tenant.employee(dept)
    with calls.listening() as log:
        assert run(employees.move_employee(tenant.table, emp.emp_id, dept.dept_id)) == employees.Move(emp, None)
    assert not WRITES & set(log.operations())


def test_move_employee__stale_version__changes_nothing(tenant: Tenant) -> None:
    source, target = tenant.department("From"), tenant.department("To")
    emp = tenant.employee(source)
    current = run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, first_name="V2"))
    with pytest.raises(StaleVersion):
        run(employees.move_employee(tenant.table, emp.emp_id, target.dept_id, expected_version=1))
    assert run(employees.get_employee(tenant.table, emp.emp_id, consistent=True)) == current
    assert (headcount(tenant, source.dept_id), headcount(tenant, target.dept_id)) == (1, 0)
    assert (members(tenant, source.dept_id), members(tenant, target.dept_id)) == ([emp.emp_id], [])


def test_move_employee__unknown_department__invalid_input_and_nothing_changed(tenant: Tenant) -> None:
    source = tenant.department()
    emp = tenant.employee(source)
    with pytest.raises(InvalidInput) as raised:
        run(employees.move_employee(tenant.table, emp.emp_id, ids.new_id()))
    assert raised.value.field == "department_id"
    assert run(employees.get_employee(tenant.table, emp.emp_id, consistent=True)) == emp
    assert headcount(tenant, source.dept_id) == 1
    assert members(tenant, source.dept_id) == [emp.emp_id]


def test_move_employee__unknown_employee__not_found(tenant: Tenant) -> None:
    with pytest.raises(NotFound):
        run(employees.move_employee(tenant.table, ids.new_id(), tenant.department().dept_id))


def test_move_employee__inactive__conflict(tenant: Tenant) -> None:
    source, target = tenant.department("From"), tenant.department("To")
    emp = tenant.employee(source)
    run(employees.terminate_employee(tenant.table, emp.emp_id))
    with pytest.raises(Conflict, match="inactive"):
        run(employees.move_employee(tenant.table, emp.emp_id, target.dept_id))
    assert headcount(tenant, target.dept_id) == 0


def test_terminate_employee__inactive_and_out_of_the_headcount(tenant: Tenant) -> None:
    dept = tenant.department()
    emp, stays = tenant.employee(dept), tenant.employee(dept)
    terminated = run(employees.terminate_employee(tenant.table, emp.emp_id, expected_version=1))
    assert (terminated.status, terminated.version) == (EmployeeStatus.INACTIVE, 2)
    assert terminated.terminated_at is not None
    assert run(employees.get_employee(tenant.table, emp.emp_id)) == terminated
    assert headcount(tenant, dept.dept_id) == 1
    assert members(tenant, dept.dept_id) == [stays.emp_id]


def test_terminate_employee__twice__conflict_and_headcount_kept(tenant: Tenant) -> None:
    dept = tenant.department()
    emp = tenant.employee(dept)
    run(employees.terminate_employee(tenant.table, emp.emp_id))
    with pytest.raises(Conflict, match="already inactive"):
        run(employees.terminate_employee(tenant.table, emp.emp_id))
    assert headcount(tenant, dept.dept_id) == 0


def test_terminate_employee__stale_version__changes_nothing(tenant: Tenant) -> None:
    dept = tenant.department()
    emp = tenant.employee(dept)
    current = run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, last_name="V2"))
    with pytest.raises(StaleVersion):
        run(employees.terminate_employee(tenant.table, emp.emp_id, expected_version=1))
    assert run(employees.get_employee(tenant.table, emp.emp_id, consistent=True)) == current
    assert headcount(tenant, dept.dept_id) == 1


def test_employee_entity__read_back_equals_written(tenant: Tenant) -> None:
    emp = tenant.employee()
    assert isinstance(emp, Employee)
    assert run(employees.get_employees(tenant.table, [emp.emp_id])) == [emp]


def test_update_employee__stored_values_the_rules_now_refuse__kept_not_revalidated(
    tenant: Tenant, client: DynamoDBClient
) -> None:
    # An employee an earlier release stored: a soft hyphen in the first name, 70 bytes before the @.
    emp = replace(raw_employees(tenant.org_id, 1)[0], first_name="Ma\u00adria", email=tenant.email("m" * 70), version=1)
    write_items(client, tenant.table.name, employee_items(emp))
    updated = run(employees.update_employee(tenant.table, emp.emp_id, expected_version=1, last_name="Renamed"))
    assert (updated.first_name, updated.last_name, updated.email) == ("Ma\u00adria", "Renamed", emp.email)
    # Looking the address up is an input like any other, so it is refused (and so is signing in).
    with pytest.raises(InvalidInput, match="at most 64 bytes before the @"):
        run(employees.find_employee_id_by_email(tenant.table, emp.email))
