"""The data invariants (counters equal what they count, one application per person and job)
under concurrency: real threads against DynamoDB Local.

Threads start together at a barrier (synchronisation, not sleeps); each outcome is either
a success or a typed conflict, and the table is read back afterwards to prove the invariant.
"""

from __future__ import annotations

import inspect
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TypeVar

import pytest

from datastore.errors import Conflict, StaleVersion, Unavailable
from datastore.kinds import layout
from datastore.kinds.entities import Role
from datastore.signin import identities
from datastore.table import by_id
from datastore.table.pagination import PageRequest
from datastore.tenancy.scope import SignInScope
from datastore.tenants import applications, employees, jobs
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.support import all_pages, assert_headcounts_hold

T = TypeVar("T")

CONTENDERS = 20
MOVES = 200
DEPARTMENTS = 5
MOVERS = 20


def race(tasks: list[Callable[[], T | Awaitable[T]]], workers: int = CONTENDERS) -> list[T | Exception]:
    """Run ``tasks`` on ``workers`` threads released together; each result or its error. A
    task may return a coroutine (a datastore write): it runs on the session's loop
    (tests/blocking.py), where the writes of all threads are in flight together."""
    barrier = threading.Barrier(min(workers, len(tasks)))

    def contend(task: Callable[[], T | Awaitable[T]], first_wave: bool) -> T | Exception:
        if first_wave:
            barrier.wait()
        try:
            result = task()
            return run(result) if inspect.isawaitable(result) else result
        except (Conflict, Unavailable) as error:
            return error

    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(contend, task, index < workers) for index, task in enumerate(tasks)]
        return [future.result() for future in futures]


def outcomes(results: Sequence[object]) -> Counter[str]:
    return Counter(type(result).__name__ if isinstance(result, Exception) else "ok" for result in results)


def test_create_employee__20_concurrent_with_one_email__exactly_one_wins(tenant: Tenant) -> None:
    dept = tenant.department()
    email = tenant.email(f"contested{ids.new_id().lower()}")

    def create() -> str:
        return run(
            employees.create_employee(
                tenant.table,
                email=email,
                first_name="Con",
                last_name="Tested",
                department_id=dept.dept_id,
                role=Role.EMPLOYEE,
            )
        ).emp_id

    results = race([create] * CONTENDERS)
    assert outcomes(results) == Counter({"ok": 1, "Conflict": CONTENDERS - 1})
    (winner,) = [r for r in results if isinstance(r, str)]
    identity = run(identities.find_identity(tenant.table.with_scope(SignInScope()), email))
    assert identity is not None and identity.emp_id == winner
    assert run(employees.find_employee_id_by_email(tenant.table, email)) == winner
    assert [e.emp_id for e in all_pages(partial(employees.list_employees, tenant.table))] == [
        tenant.admin.emp_id,
        winner,
    ]
    assert_headcounts_hold(tenant.table, [dept])


def test_move_employee__200_concurrent_random_moves__headcounts_equal_memberships(tenant: Tenant) -> None:
    depts = [tenant.department(f"D{n}") for n in range(DEPARTMENTS)]
    movers = [tenant.employee(depts[n % DEPARTMENTS]) for n in range(MOVERS)]
    pick = random.Random(20240601)
    plan = [(pick.choice(movers).emp_id, pick.choice(depts).dept_id) for _ in range(MOVES)]
    leavers = {movers[n].emp_id for n in (0, 7)}

    def move(emp_id: str, dept_id: str) -> str:
        return run(employees.move_employee(tenant.table, emp_id, dept_id)).employee.department_id or ""

    def terminate(emp_id: str) -> str:
        return run(employees.terminate_employee(tenant.table, emp_id)).emp_id

    tasks: list[Callable[[], str]] = [partial(move, e, d) for e, d in plan]
    # Two terminations land in the middle of the moves.
    for offset, emp_id in zip((60, 140), sorted(leavers), strict=True):
        tasks.insert(offset, partial(terminate, emp_id))
    results = race(tasks, workers=16)
    counted = outcomes(results)
    # Sixteen writers on five department items: a move can lose the race to others eight
    # times running and be refused as retryable, having written nothing. Anything else that
    # is unavailable (a timeout, a write that may have landed) is a failure of the test.
    refused = [r for r in results if isinstance(r, Unavailable)]
    assert all(not r.maybe_written and "kept conflicting" in str(r) for r in refused), [str(r) for r in refused]
    assert set(counted) <= {"ok", "Conflict", "StaleVersion", "Unavailable"}, counted
    assert counted["ok"] >= MOVES // 2, counted
    assert_headcounts_hold(tenant.table, depts)
    assert sum(
        d.headcount for d in run(by_id.get_many(tenant.table, layout.DEPARTMENT, [d.dept_id for d in depts])) if d
    ) == MOVERS - len(leavers)


def test_apply_to_job__20_concurrent_by_one_employee__exactly_one(tenant: Tenant) -> None:
    dept = tenant.department()
    applicant = tenant.employee(dept)
    job = run(
        jobs.publish_job(tenant.table, run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T")).job_id)
    )

    def apply() -> str:
        return run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id)).app_id

    results = race([apply] * CONTENDERS)
    assert outcomes(results) == Counter({"ok": 1, "Conflict": CONTENDERS - 1})
    (winner,) = [r for r in results if isinstance(r, str)]
    listed = run(applications.list_job_applications(tenant.table, job.job_id, PageRequest())).items
    assert [a.app_id for a in listed] == [winner]
    mine = run(applications.list_employee_applications(tenant.table, applicant.emp_id, PageRequest())).items
    assert [a.app_id for a in mine] == [winner]


def test_update_employee__20_concurrent_with_one_expected_version__one_wins_rest_change_nothing(
    tenant: Tenant,
) -> None:
    emp = tenant.employee()

    def rename(n: int) -> str:
        return run(
            employees.update_employee(tenant.table, emp.emp_id, expected_version=emp.version, first_name=f"Name {n}")
        ).first_name

    results = race([partial(rename, n) for n in range(CONTENDERS)])
    assert outcomes(results) == Counter({"ok": 1, "StaleVersion": CONTENDERS - 1})
    assert all(isinstance(r, StaleVersion) and r.current_version == 2 for r in results if not isinstance(r, str))
    (winner,) = [r for r in results if isinstance(r, str)]
    stored = run(employees.get_employee(tenant.table, emp.emp_id, consistent=True))
    assert stored is not None and (stored.first_name, stored.version) == (winner, 2)


def test_update_job__stale_version__changes_nothing(tenant: Tenant) -> None:
    dept = tenant.department()
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))

    def retitle(n: int) -> str:
        return run(jobs.update_job(tenant.table, job.job_id, expected_version=1, title=f"Title {n}")).title

    results = race([partial(retitle, n) for n in range(CONTENDERS)])
    assert outcomes(results) == Counter({"ok": 1, "StaleVersion": CONTENDERS - 1})
    (winner,) = [r for r in results if isinstance(r, str)]
    stored = run(jobs.get_job(tenant.table, job.job_id, consistent=True))
    assert stored is not None and (stored.title, stored.version) == (winner, 2)


def test_apply_to_job__racing_close__closed_job_takes_no_application(tenant: Tenant) -> None:
    dept = tenant.department()
    applicants = [tenant.employee(dept) for _ in range(8)]
    job = run(
        jobs.publish_job(tenant.table, run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T")).job_id)
    )

    def apply(emp_id: str) -> str:
        return run(applications.apply_to_job(tenant.table, job.job_id, emp_id)).emp_id

    def close() -> str:
        run(jobs.close_job(tenant.table, job.job_id))
        # Closing takes the job out of AP8 in the same write: visible at once.
        assert job.job_id not in [j.job_id for j in run(jobs.list_open_jobs(tenant.table, PageRequest())).items]
        return "closed"

    tasks: list[Callable[[], str]] = [partial(apply, a.emp_id) for a in applicants]
    tasks.insert(4, close)
    results = race(tasks, workers=len(tasks))
    assert "closed" in results
    applied = {r for r in results if isinstance(r, str) and r != "closed"}
    refused = [r for r in results if isinstance(r, Exception)]
    assert all(isinstance(r, Conflict) and "closed" in str(r) for r in refused)
    listed = run(applications.list_job_applications(tenant.table, job.job_id, PageRequest())).items
    assert {a.emp_id for a in listed} == applied
    late = tenant.employee(dept)
    with pytest.raises(Conflict, match="the job is closed"):
        run(applications.apply_to_job(tenant.table, job.job_id, late.emp_id))
