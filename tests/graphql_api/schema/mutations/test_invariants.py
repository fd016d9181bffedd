"""The data invariants through the API, with real concurrency against DynamoDB Local."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, TypeVar

from datastore.kinds.entities import Department
from datastore.table.pagination import PageRequest
from datastore.tenants import applications, departments, employees, jobs
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.schema.mutations.documents import (
    APPLY,
    CLOSE_JOB,
    CREATE_EMPLOYEE,
    MOVE_EMPLOYEE,
    UPDATE_EMPLOYEE,
    audit_actions,
    codes,
    gid,
    open_job,
)

T = TypeVar("T")

# How far a server stamp taken before commit may trail another transaction's commit.
CLOCK_WINDOW = timedelta(milliseconds=500)

DEPARTMENT_VIEW = """
query($id: ID!) { department(id: $id) { headcount employees(first: 100) { edges { node { id } } } } }"""

AUDIT_ACTIONS = "{ organization { auditLog(first: 100) { edges { node { action } } } } }"


def in_parallel(tasks: list[Callable[[], T]], workers: int = 32) -> list[T]:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda task: task(), tasks))


def outcome(body: dict[str, Any]) -> str:
    found = codes(body)
    return "OK" if not found else ",".join(found)


def test_concurrent_create_employee_with_one_email__exactly_one_wins(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    dept = tenant.department()
    variables = {
        "input": {"email": tenant.email("only.one"), "firstName": "O", "lastName": "One", "departmentId": gid(dept)}
    }
    results = in_parallel([lambda: admin.query(CREATE_EMPLOYEE, variables)] * 12)
    assert Counter(map(outcome, results)) == {"OK": 1, "CONFLICT": 11}
    winner = next(r for r in results if outcome(r) == "OK")["data"]["createEmployee"]["employee"]["id"]
    assert (
        run(employees.find_employee_id_by_email(tenant.table, tenant.email("only.one"))) == ids.decode(winner).parts[0]
    )
    stored = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert stored is not None and stored.headcount == 1


def test_200_concurrent_moves__every_headcount_equals_its_membership(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    depts: list[Department] = [tenant.department(f"D{i}") for i in range(5)]
    people = [tenant.employee(depts[i % 5]) for i in range(20)]
    rng = random.Random(5)
    moves = [(rng.choice(people), rng.choice(depts)) for _ in range(200)]
    results = in_parallel(
        [
            lambda p=person, d=dept: admin.query(MOVE_EMPLOYEE, {"input": {"id": gid(p), "departmentId": gid(d)}})
            for person, dept in moves
        ]
    )
    # Unversioned moves re-read and retry; under this much contention a few may still lose.
    assert set(map(outcome, results)) <= {"OK", "CONFLICT"}
    assert Counter(map(outcome, results))["OK"] >= 150
    total = 0
    for dept in depts:
        view = admin.data(DEPARTMENT_VIEW, {"id": gid(dept)})["department"]
        members = {edge["node"]["id"] for edge in view["employees"]["edges"]}
        active_here = {
            gid(e)
            for e in (run(employees.get_employee(tenant.table, p.emp_id, consistent=True)) for p in people)
            if e is not None and e.department_id == dept.dept_id
        }
        assert view["headcount"] == len(members) == len(active_here)
        assert members == active_here
        total += view["headcount"]
    assert total == len(people)


def test_concurrent_apply_with_one_employee_and_job__exactly_one(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    me = api.as_(tenant.employee())
    results = in_parallel([lambda: me.query(APPLY, {"input": {"jobPostingId": gid(job)}})] * 12)
    assert Counter(map(outcome, results)) == {"OK": 1, "CONFLICT": 11}
    assert len(run(applications.list_job_applications(tenant.table, job.job_id, PageRequest(first=50))).items) == 1


def test_apply_racing_close__applications_exist_only_while_open(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    applicants = [tenant.employee() for _ in range(30)]
    admin = api.admin_of(tenant)
    closed_at: list[float] = []

    def close() -> dict[str, Any]:
        body = admin.query(CLOSE_JOB, {"input": {"id": gid(job)}})
        closed_at.append(datetime.now().timestamp())
        return body

    def apply(person: Any) -> tuple[float, dict[str, Any]]:
        sent = datetime.now().timestamp()
        return sent, api.as_(person).query(APPLY, {"input": {"jobPostingId": gid(job)}})

    tasks: list[Callable[[], Any]] = [lambda p=p: apply(p) for p in applicants]
    tasks.insert(10, close)
    results = in_parallel(tasks, workers=16)
    assert outcome(results[10]) == "OK"
    applies: list[tuple[float, dict[str, Any]]] = [r for i, r in enumerate(results) if i != 10]
    assert {outcome(body) for _, body in applies} <= {"OK", "CONFLICT"}
    # Every apply sent after the close had returned was refused.
    assert all(outcome(body) == "CONFLICT" for sent, body in applies if sent > closed_at[0])
    closed = run(jobs.get_job(tenant.table, job.job_id, consistent=True))
    assert closed is not None and closed.closed_at is not None
    stored = run(applications.list_job_applications(tenant.table, job.job_id, PageRequest(first=100))).items
    assert len(stored) == sum(outcome(body) == "OK" for _, body in applies)
    # Each surviving application was written while the job was open: its stamp is no later
    # than the moment the close's response came back. (Both stamps are taken by the server
    # before its transaction commits, so submittedAt may exceed closedAt by the close's own
    # commit time, a few milliseconds; the ConditionCheck, not the stamps, is the guarantee.)
    assert all(a.submitted_at.timestamp() <= closed_at[0] for a in stored)
    assert all(a.submitted_at <= closed.closed_at + CLOCK_WINDOW for a in stored)


def test_concurrent_updates_with_one_expected_version__exactly_one_wins(api: Api, tenant: Tenant) -> None:
    person = tenant.employee()
    admin = api.admin_of(tenant)
    results = in_parallel(
        [
            lambda n=n: admin.query(
                UPDATE_EMPLOYEE, {"input": {"id": gid(person), "expectedVersion": person.version, "firstName": f"N{n}"}}
            )
            for n in range(12)
        ]
    )
    assert Counter(map(outcome, results)) == {"OK": 1, "CONFLICT": 11}
    winner = next(r for r in results if outcome(r) == "OK")["data"]["updateEmployee"]["employee"]
    stored = run(employees.get_employee(tenant.table, person.emp_id, consistent=True))
    assert stored is not None and (stored.first_name, stored.version) == (winner["firstName"], person.version + 1)
    assert all(
        r["errors"][0]["extensions"]["currentVersion"] == person.version + 1 for r in results if outcome(r) != "OK"
    )


def test_transaction_failing_in_its_last_item__leaves_nothing_not_even_an_audit_event(api: Api, tenant: Tenant) -> None:
    """createEmployee's last item is the headcount ADD, conditioned on the department existing."""
    admin = api.admin_of(tenant)
    before = audit_actions(tenant)
    ghost = ids.encode("Department", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
    body = admin.query(
        CREATE_EMPLOYEE,
        {"input": {"email": tenant.email("ghost"), "firstName": "G", "lastName": "H", "departmentId": ghost}},
    )
    assert codes(body) == ["BAD_USER_INPUT"]
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("ghost"))) is None
    everyone = run(employees.list_employees(tenant.table, PageRequest(first=100))).items
    assert [e.emp_id for e in everyone] == [tenant.admin.emp_id]
    assert audit_actions(tenant) == before
    edges = admin.data(AUDIT_ACTIONS)["organization"]["auditLog"]["edges"]
    assert [edge["node"]["action"] for edge in edges] == before
    # The identity was not left behind either: the address is still free.
    admin.data(CREATE_EMPLOYEE, {"input": {"email": tenant.email("ghost"), "firstName": "G", "lastName": "H"}})
