"""Transaction conflicts and throttling, injected at the client boundary (see faults.py)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from datastore import audit, by_id, departments, employees, layout
from datastore.async_client import AsyncDynamo
from datastore.calls import CallLog
from datastore.entities import AuditEvent, Department
from datastore.errors import Unavailable
from datastore.pagination import PageRequest
from tests.blocking import run
from tests.conftest import TEST_RETRY, Tenant
from tests.datastore.faults import (
    PROVISIONED_THROUGHPUT_EXCEEDED,
    THROTTLING_ERROR,
    TRANSACTION_CONFLICT,
    TransactFaults,
    injected,
)

TRANSACT = "TransactWriteItems"


@pytest.fixture
def faults(dynamo: AsyncDynamo) -> Iterator[TransactFaults]:
    with injected(dynamo) as planned:
        yield planned


def audit_trail(tenant: Tenant) -> list[AuditEvent]:
    return list(run(audit.list_audit_events(tenant.table, PageRequest(first=100))).items)


def assert_headcounts_match(tenant: Tenant, *depts: Department) -> None:
    for dept in depts:
        current = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
        assert current is not None
        members = run(employees.list_department_employees(tenant.table, dept.dept_id, PageRequest(first=100)))
        assert current.headcount == len(members.items), current.name


@pytest.mark.parametrize("reason", [TRANSACTION_CONFLICT, THROTTLING_ERROR])
def test_move__cancelled_then_committed__retried_within_the_bound(
    tenant: Tenant, faults: TransactFaults, call_log: CallLog, reason: str
) -> None:
    source, target = tenant.department("Source"), tenant.department("Target")
    emp = tenant.employee(source)
    trail = audit_trail(tenant)
    before = call_log.count(TRANSACT)
    faults.cancel(reason, times=TEST_RETRY.attempts - 1)

    moved = run(employees.move_employee(tenant.table, emp.emp_id, target.dept_id)).employee

    assert moved.department_id == target.dept_id
    assert call_log.count(TRANSACT) - before == TEST_RETRY.attempts
    assert faults.injected == TEST_RETRY.attempts - 1
    assert_headcounts_match(tenant, source, target)
    after = audit_trail(tenant)
    assert len(after) == len(trail) + 1
    assert after[0].action == "employee.move"


@pytest.mark.parametrize("reason", [TRANSACTION_CONFLICT, THROTTLING_ERROR])
def test_move__cancelled_every_time__unavailable_and_nothing_written(
    tenant: Tenant, faults: TransactFaults, call_log: CallLog, reason: str
) -> None:
    source, target = tenant.department("Source"), tenant.department("Target")
    emp = tenant.employee(source)
    trail = audit_trail(tenant)
    before = call_log.count(TRANSACT)
    faults.cancel(reason, times=None)

    with pytest.raises(Unavailable, match=f"after {TEST_RETRY.attempts} tries"):
        run(employees.move_employee(tenant.table, emp.emp_id, target.dept_id, expected_version=1))

    assert call_log.count(TRANSACT) - before == TEST_RETRY.attempts
    faults.clear()
    assert run(employees.get_employee(tenant.table, emp.emp_id, consistent=True)) == emp
    assert_headcounts_match(tenant, source, target)
    counts = run(by_id.get_many(tenant.table, layout.DEPARTMENT, [source.dept_id, target.dept_id]))
    assert [d.headcount for d in counts if d] == [1, 0]
    assert audit_trail(tenant) == trail


def test_create__exhausted_retries_under_an_idempotency_key__a_later_retry_writes_once(
    tenant: Tenant, faults: TransactFaults, call_log: CallLog
) -> None:
    before = len(call_log.snapshot())
    faults.cancel(TRANSACTION_CONFLICT, times=None)
    with pytest.raises(Unavailable):
        run(departments.create_department(tenant.table, name="Ops", idempotency_key="retry-me"))
    faults.clear()
    attempts = [call for call in call_log.snapshot()[before:] if call.operation == TRANSACT]
    assert len(attempts) == TEST_RETRY.attempts
    tokens = {call.params["ClientRequestToken"] for call in attempts}
    assert len(tokens) == 1

    created = run(departments.create_department(tenant.table, name="Ops", idempotency_key="retry-me"))
    again = run(departments.create_department(tenant.table, name="Ops", idempotency_key="retry-me"))

    assert again == created
    names = [d.name for d in run(departments.list_departments(tenant.table, PageRequest(first=100))).items]
    assert names.count("Ops") == 1


def test_throttled_request__unavailable_with_a_clean_message(tenant: Tenant, faults: TransactFaults) -> None:
    dept = tenant.department()
    trail = audit_trail(tenant)
    faults.refuse(PROVISIONED_THROUGHPUT_EXCEEDED)

    with pytest.raises(Unavailable) as refused:
        tenant.employee(dept)

    assert str(refused.value) == "DynamoDB is throttling requests"  # no backend exception name
    assert not refused.value.maybe_written  # a throttled write was refused, never applied
    assert refused.value.__cause__ is None
    assert audit_trail(tenant) == trail
    assert_headcounts_match(tenant, dept)


def test_concurrent_moves_with_injected_conflicts__headcounts_equal_memberships(
    tenant: Tenant, faults: TransactFaults, call_log: CallLog
) -> None:
    depts = [tenant.department(f"Dept {i}") for i in range(3)]
    people = [tenant.employee(depts[i % 3]) for i in range(12)]
    trail = audit_trail(tenant)
    before = call_log.count(TRANSACT)
    faults.every(3, TRANSACTION_CONFLICT)

    def move_around(index: int) -> int:
        emp = people[index]
        moves = 0
        for step in range(1, 4):
            run(employees.move_employee(tenant.table, emp.emp_id, depts[(index + step) % 3].dept_id))
            moves += 1
        return moves

    with ThreadPoolExecutor(8) as pool:
        moves = sum(pool.map(move_around, range(len(people))))

    assert faults.injected > 0
    assert call_log.count(TRANSACT) - before == moves + faults.injected
    assert_headcounts_match(tenant, *depts)
    counts = run(by_id.get_many(tenant.table, layout.DEPARTMENT, [d.dept_id for d in depts]))
    assert sum(d.headcount for d in counts if d) == len(people)
    events = audit_trail(tenant)
    assert len(events) == len(trail) + moves
