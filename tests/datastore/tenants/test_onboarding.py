"""datastore/tenants/onboarding.py: what one bulk-onboarding row means, against DynamoDB Local."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from datastore.aws.calls import CallLog
from datastore.errors import Conflict, InvalidInput
from datastore.kinds.entities import Role
from datastore.tenants import departments, onboarding
from datastore.tenants.onboarding import Outcome, Row
from tests.blocking import run
from tests.conftest import Tenant


def row(tenant: Tenant, local: str, **changes: Any) -> Row:
    return onboarding.validated(replace(Row(tenant.email(local), "Ana", "Lima"), **changes))


def test_validated__normalises_like_create_employee() -> None:
    checked = onboarding.validated(Row("Ana@Example.COM", " Ana ", "Lima "))
    assert (checked.email, checked.first_name, checked.last_name) == ("ana@example.com", "Ana", "Lima")


@pytest.mark.parametrize(
    ("given", "field"),
    [
        (Row("not-an-email", "A", "B"), "email"),
        (Row("a@b.example", "A\x1b", "B"), "first_name"),
        (Row("a@b.example", "A", " "), "last_name"),
    ],
)
def test_validated__bad_field__invalid_input_naming_it(given: Row, field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        onboarding.validated(given)
    assert raised.value.field == field


def test_import_row__new_email__created_with_headcount(tenant: Tenant) -> None:
    dept = tenant.department()
    done = run(onboarding.import_row(tenant.table, row(tenant, "new", department_id=dept.dept_id), None))
    assert done.outcome is Outcome.CREATED
    assert done.employee.department_id == dept.dept_id
    found = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert found is not None and found.headcount == 1


def test_existing__found_and_missing__two_batch_gets(tenant: Tenant, call_log: CallLog) -> None:
    person = tenant.employee()
    before = call_log.count()
    found = run(onboarding.existing(tenant.table, [person.email, tenant.email("nobody")]))
    assert found == {person.email: person}
    assert [c.operation for c in call_log.snapshot()[before:]] == ["BatchGetItem", "BatchGetItem"]


def test_existing__none_found__one_batch_get(tenant: Tenant, call_log: CallLog) -> None:
    before = call_log.count()
    assert run(onboarding.existing(tenant.table, [tenant.email("x"), tenant.email("y")])) == {}
    assert call_log.count() - before == 1


def test_import_row__same_data__unchanged_without_a_call(tenant: Tenant, call_log: CallLog) -> None:
    hired = datetime(2026, 3, 1, 9, tzinfo=UTC)
    first = run(onboarding.import_row(tenant.table, row(tenant, "same", hired_at=hired), None))
    before = call_log.count()
    again = run(onboarding.import_row(tenant.table, row(tenant, "same", hired_at=hired), first.employee))
    assert again.outcome is Outcome.UNCHANGED and again.employee == first.employee
    assert call_log.count() == before
    # An omitted hire date is not compared.
    assert run(onboarding.import_row(tenant.table, row(tenant, "same"), first.employee)).outcome is Outcome.UNCHANGED


def test_import_row__other_data__conflict_naming_the_fields(tenant: Tenant) -> None:
    first = run(onboarding.import_row(tenant.table, row(tenant, "other"), None)).employee
    with pytest.raises(Conflict, match="another lastName, role"):
        run(onboarding.import_row(tenant.table, row(tenant, "other", last_name="Other", role=Role.MANAGER), first))


def test_import_row__lookup_missed_a_concurrent_create__unchanged(tenant: Tenant) -> None:
    # The batch lookup saw nothing (current=None), but the row is there by the time it writes.
    first = run(onboarding.import_row(tenant.table, row(tenant, "late"), None)).employee
    again = run(onboarding.import_row(tenant.table, row(tenant, "late"), None))
    assert again.outcome is Outcome.UNCHANGED and again.employee == first


def test_import_row__same_row_from_eight_threads__created_once(tenant: Tenant) -> None:
    dept = tenant.department()
    given = row(tenant, "race", department_id=dept.dept_id)
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda _: run(onboarding.import_row(tenant.table, given, None)), range(8)))
    assert sorted(o.outcome for o in outcomes) == [Outcome.CREATED] + [Outcome.UNCHANGED] * 7
    assert len({o.employee.emp_id for o in outcomes}) == 1
    found = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert found is not None and found.headcount == 1
