"""Idempotent retries over HTTP: one write per key; another input under the key is refused."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx
import pytest

from datastore.aws import calls
from datastore.kinds.entities import Role
from datastore.table.pagination import PageRequest
from datastore.tenants import applications, departments, jobs
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.schema.mutations.documents import (
    APPLY,
    CREATE_DEPARTMENT,
    MOVE_EMPLOYEE,
    audit_actions,
    error,
    gid,
    manager_of,
    open_job,
)


def test_retry_with_same_key__writes_once_and_returns_the_first_result(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    variables = {"input": {"name": "Research", "idempotencyKey": "create-research-1"}}
    with calls.listening() as log:
        first = admin.data(CREATE_DEPARTMENT, variables)
        again = [admin.data(CREATE_DEPARTMENT, variables) for _ in range(3)]
    assert all(result == first for result in again)
    assert log.count("TransactWriteItems") == 1
    listed = run(departments.list_departments(tenant.table, PageRequest(first=10))).items
    assert [d.name for d in listed] == ["Research"]
    assert audit_actions(tenant).count("department.create") == 1


def test_retry_of_apply_with_same_key__one_application(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    me = api.as_(tenant.employee())
    variables = {"input": {"jobPostingId": gid(job), "idempotencyKey": "apply-1"}}
    with calls.listening() as log:
        first = me.data(APPLY, variables)
        assert me.data(APPLY, variables) == first
    assert log.count("TransactWriteItems") == 1
    assert len(run(applications.list_job_applications(tenant.table, job.job_id, PageRequest(first=10))).items) == 1


def test_same_key_with_different_input__is_refused(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    admin.data(CREATE_DEPARTMENT, {"input": {"name": "Research", "idempotencyKey": "k-1"}})
    with calls.listening() as log:
        body = admin.query(CREATE_DEPARTMENT, {"input": {"name": "Sales", "idempotencyKey": "k-1"}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.idempotencyKey"}
    assert log.count("TransactWriteItems") == 0
    assert [d.name for d in run(departments.list_departments(tenant.table, PageRequest(first=10))).items] == [
        "Research"
    ]


def test_same_key_for_another_mutation__is_refused(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    person = tenant.employee(eng)
    admin.data(CREATE_DEPARTMENT, {"input": {"name": "Research", "idempotencyKey": "k-2"}})
    body = admin.query(MOVE_EMPLOYEE, {"input": {"id": gid(person), "departmentId": gid(ops), "idempotencyKey": "k-2"}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.idempotencyKey"}


def test_malformed_key__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(CREATE_DEPARTMENT, {"input": {"name": "R", "idempotencyKey": "has space"}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.idempotencyKey"}
    assert run(departments.list_departments(tenant.table, PageRequest(first=10))).items == []


# --- every keyed mutation: a retry answers exactly what the first attempt did ------------------

PAGE_INFO: Final = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"

# Every field of every payload object, and of the objects they reach one level on; lists are
# read through their connections. Fragments that spread others come first (full_document).
FRAGMENTS: Final = {
    "ApplicationParts": """
fragment ApplicationParts on Application {
  id status submittedAt
  employee { ...EmployeeParts }
  jobPosting { ...JobParts }
}""",
    "EmployeeParts": f"""
fragment EmployeeParts on Employee {{
  id email firstName lastName role status hiredAt terminatedAt version
  department {{ id name headcount manager {{ id }} }}
  applications(first: 5) {{ edges {{ cursor node {{ id status submittedAt }} }} {PAGE_INFO} }}
}}""",
    "DepartmentParts": f"""
fragment DepartmentParts on Department {{
  id name headcount
  manager {{ id email firstName lastName role status hiredAt terminatedAt version }}
  employees(first: 5) {{ edges {{ cursor node {{ id email status version }} }} {PAGE_INFO} }}
}}""",
    "JobParts": f"""
fragment JobParts on JobPosting {{
  id title description status postedAt closedAt version
  department {{ id name headcount }}
  applications(first: 5) {{ edges {{ cursor node {{ id status submittedAt }} }} {PAGE_INFO} }}
}}""",
}

FULL: Final = {
    "createDepartment": "department { ...DepartmentParts }",
    "updateDepartment": "department { ...DepartmentParts }",
    "createEmployee": "employee { ...EmployeeParts } department { ...DepartmentParts }",
    "updateEmployee": "employee { ...EmployeeParts }",
    "moveEmployee": (
        "employee { ...EmployeeParts } fromDepartment { ...DepartmentParts } toDepartment { ...DepartmentParts }"
    ),
    "terminateEmployee": "employee { ...EmployeeParts } department { ...DepartmentParts }",
    "createJobPosting": "jobPosting { ...JobParts }",
    "updateJobPosting": "jobPosting { ...JobParts }",
    "publishJobPosting": "jobPosting { ...JobParts }",
    "closeJobPosting": "jobPosting { ...JobParts }",
    "applyToJob": "application { ...ApplicationParts }",
    "withdrawApplication": "application { ...ApplicationParts }",
    "setApplicationStatus": "application { ...ApplicationParts }",
}


def full_document(mutation: str) -> str:
    """``mutation`` selecting its whole payload, with the fragments it spreads."""
    input_type = mutation[0].upper() + mutation[1:] + "Input"
    document = f"mutation($input: {input_type}!) {{ {mutation}(input: $input) {{ {FULL[mutation]} }} }}"
    for name, fragment in FRAGMENTS.items():
        if f"...{name}" in document:
            document += fragment
    return document


@dataclass(frozen=True)
class Retry:
    """A keyed mutation ready to run: its caller, its input, and another input for the same key."""

    caller: GraphQLClient
    input: dict[str, Any]
    other_input: dict[str, Any]


RetryPlan = Callable[[Api, Tenant], Retry]


def _create_department(api: Api, t: Tenant) -> Retry:
    boss = t.employee(t.department("Old"), role=Role.MANAGER)
    return Retry(api.admin_of(t), {"name": "Research", "managerId": gid(boss)}, {"name": "Sales"})


def _update_department(api: Api, t: Tenant) -> Retry:
    dept = t.department("Eng")
    t.employee(dept)
    boss = t.employee(dept, role=Role.MANAGER)
    return Retry(
        api.admin_of(t), {"id": gid(dept), "name": "Platform", "managerId": gid(boss)}, {"id": gid(dept), "name": "X"}
    )


def _create_employee(api: Api, t: Tenant) -> Retry:
    dept = t.department()
    t.employee(dept)
    email = t.email(f"hire{ids.new_id().lower()}")  # in the organisation's own domain
    person = {"email": email, "firstName": "New", "lastName": "Hire", "departmentId": gid(dept)}
    return Retry(api.admin_of(t), person, {**person, "lastName": "Other"})


def _update_employee(api: Api, t: Tenant) -> Retry:
    person = t.employee(t.department())
    change = {"id": gid(person), "expectedVersion": person.version, "firstName": "Renamed", "role": "MANAGER"}
    return Retry(api.admin_of(t), change, {**change, "firstName": "Other"})


def _move_employee(api: Api, t: Tenant) -> Retry:
    source, target = t.department("Source"), t.department("Target")
    person, _stays = t.employee(source), t.employee(source)
    move = {"id": gid(person), "departmentId": gid(target)}
    return Retry(api.admin_of(t), move, {**move, "departmentId": gid(source)})


def _terminate_employee(api: Api, t: Tenant) -> Retry:
    dept = t.department()
    person, _stays = t.employee(dept), t.employee(dept)
    return Retry(api.admin_of(t), {"id": gid(person)}, {"id": gid(person), "expectedVersion": person.version})


def _create_job(api: Api, t: Tenant) -> Retry:
    job = {"departmentId": gid(t.department()), "title": "Welder", "description": "Joins things."}
    return Retry(api.admin_of(t), job, {**job, "title": "Baker"})


def _update_job(api: Api, t: Tenant) -> Retry:
    dept, job = t.department("Eng"), open_job(t, t.department("Ops"))
    change = {"id": gid(job), "expectedVersion": job.version, "title": "Senior", "departmentId": gid(dept)}
    return Retry(api.admin_of(t), change, {**change, "title": "Junior"})


def _publish_job(api: Api, t: Tenant) -> Retry:
    draft = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Welder"))
    return Retry(api.admin_of(t), {"id": gid(draft)}, {"id": gid(draft), "expectedVersion": draft.version})


def _close_job(api: Api, t: Tenant) -> Retry:
    job = open_job(t, t.department())
    run(applications.apply_to_job(t.table, job.job_id, t.employee().emp_id))
    return Retry(api.admin_of(t), {"id": gid(job)}, {"id": gid(job), "expectedVersion": job.version})


def _apply(api: Api, t: Tenant) -> Retry:
    # The department's manager applies, so the job's applications are theirs to read too.
    dept = t.department()
    job, other = open_job(t, dept), open_job(t, dept, "Other")
    return Retry(api.as_(manager_of(t, dept)), {"jobPostingId": gid(job)}, {"jobPostingId": gid(other)})


def _withdraw(api: Api, t: Tenant) -> Retry:
    dept = t.department()
    person = manager_of(t, dept)
    mine = run(applications.apply_to_job(t.table, open_job(t, dept).job_id, person.emp_id))
    other = run(applications.apply_to_job(t.table, open_job(t, dept, "Other").job_id, person.emp_id))
    return Retry(api.as_(person), {"id": gid(mine)}, {"id": gid(other)})


def _set_status(api: Api, t: Tenant) -> Retry:
    job = open_job(t, t.department())
    application = run(applications.apply_to_job(t.table, job.job_id, t.employee().emp_id))
    return Retry(
        api.admin_of(t), {"id": gid(application), "status": "REVIEWING"}, {"id": gid(application), "status": "REJECTED"}
    )


RETRIES: Final[dict[str, RetryPlan]] = {
    "createDepartment": _create_department,
    "updateDepartment": _update_department,
    "createEmployee": _create_employee,
    "updateEmployee": _update_employee,
    "moveEmployee": _move_employee,
    "terminateEmployee": _terminate_employee,
    "createJobPosting": _create_job,
    "updateJobPosting": _update_job,
    "publishJobPosting": _publish_job,
    "closeJobPosting": _close_job,
    "applyToJob": _apply,
    "withdrawApplication": _withdraw,
    "setApplicationStatus": _set_status,
}


def test_retries__cover_every_mutation_that_takes_a_key(api: Api) -> None:
    """A new keyed mutation must join RETRIES (and FULL) to be tested here."""
    fields = api.platform.data(
        '{ __type(name: "Mutation") { fields { name args { type { ofType { inputFields { name } } } } } } }'
    )["__type"]["fields"]
    keyed = {
        field["name"]
        for field in fields
        if any(f["name"] == "idempotencyKey" for arg in field["args"] for f in arg["type"]["ofType"]["inputFields"])
    }
    assert keyed == set(RETRIES) == set(FULL)


@pytest.mark.parametrize("mutation", list(RETRIES))
def test_retry_with_same_key_and_input__data_equals_the_first_answer(api: Api, tenant: Tenant, mutation: str) -> None:
    retry = RETRIES[mutation](api, tenant)
    document = full_document(mutation)
    variables = {"input": {**retry.input, "idempotencyKey": f"exact-{mutation}"}}
    with calls.listening() as log:
        first = retry.caller.data(document, variables)
        again = retry.caller.data(document, variables)
    assert again == first
    assert log.count("TransactWriteItems") == 1
    assert all(value is not None for value in first[mutation].values()), first


def test_retry_of_move__names_the_department_left(api: Api, tenant: Tenant) -> None:
    source, target = tenant.department("Source"), tenant.department("Target")
    person = tenant.employee(source)
    variables = {"input": {"id": gid(person), "departmentId": gid(target), "idempotencyKey": "move-once"}}
    admin = api.admin_of(tenant)
    answers = [admin.data(MOVE_EMPLOYEE, variables)["moveEmployee"] for _ in range(2)]
    expected = {"id": gid(source), "headcount": 0}
    assert [answer["fromDepartment"] for answer in answers] == [expected, expected]


@pytest.mark.parametrize("mutation", list(RETRIES))
def test_same_key_with_another_input__refused_and_nothing_written(api: Api, tenant: Tenant, mutation: str) -> None:
    retry = RETRIES[mutation](api, tenant)
    document = full_document(mutation)
    key = f"other-{mutation}"
    retry.caller.data(document, {"input": {**retry.input, "idempotencyKey": key}})
    trail = audit_actions(tenant)
    with calls.listening() as log:
        body = retry.caller.query(document, {"input": {**retry.other_input, "idempotencyKey": key}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.idempotencyKey"}
    assert log.count("TransactWriteItems") == 0
    assert audit_actions(tenant) == trail


# --- concurrent replays of one key: the first attempt's answer, or "in progress" ---------------

CONCURRENT_ATTEMPTS: Final = 16
CONCURRENT_ROUNDS: Final = 12


def in_progress(body: dict[str, Any]) -> bool:
    """Whether ``body`` is the coded refusal of an attempt whose first attempt has not finished."""
    errors = body.get("errors") or []
    return len(errors) == 1 and errors[0].get("extensions", {}).get("reason") == "IN_PROGRESS"


def answer_of(body: dict[str, Any]) -> object:
    """What a client acts on: the data, or each error's message and extensions (but the request
    id, and the cost figures of ``extensions``, which differ by attempt)."""
    errors = [
        (error["message"], {k: v for k, v in error.get("extensions", {}).items() if k != "requestId"})
        for error in body.get("errors") or []
    ]
    return errors if errors else body.get("data")


@pytest.mark.parametrize("expected_version", [False, True])
def test_concurrent_attempts_of_one_move__each_answers_the_first_answer_or_in_progress(
    server_url: str, api: Api, tenant: Tenant, expected_version: bool
) -> None:
    """Many identical keyed moves at once, as a client's retries racing its first attempt do:
    one move happens, and every answer is the committed attempt's or the coded in-progress
    error, never one computed from the state the first attempt left behind."""
    departments_ = [tenant.department("Left"), tenant.department("Right")]
    person = tenant.employee(departments_[0])
    headers = {"Authorization": f"Bearer {api.token(tenant.admin)}"}
    version = person.version

    async def round_of(number: int) -> list[dict[str, Any]]:
        target = departments_[(number + 1) % 2]
        move: dict[str, Any] = {"id": gid(person), "departmentId": gid(target), "idempotencyKey": f"race-{number}"}
        if expected_version:
            move["expectedVersion"] = version
        payload = {"query": MOVE_EMPLOYEE, "variables": {"input": move}}
        limits = httpx.Limits(max_connections=CONCURRENT_ATTEMPTS)
        async with httpx.AsyncClient(base_url=server_url, timeout=60, limits=limits, headers=headers) as http:
            responses = await asyncio.gather(*(http.post("/graphql", json=payload) for _ in range(CONCURRENT_ATTEMPTS)))
        return [response.json() for response in responses]

    waits = 0
    for number in range(CONCURRENT_ROUNDS):
        bodies = asyncio.run(round_of(number))
        answers = [answer_of(body) for body in bodies if not in_progress(body)]
        waits += len(bodies) - len(answers)
        assert answers, bodies
        # Every attempt that answered answered alike, and that answer is the move: from the
        # department left, to the one asked for, at the next version.
        assert [answer for answer in answers if answer != answers[0]] == [], answers[0]
        assert isinstance(answers[0], dict), answers[0]
        moved = answers[0]["moveEmployee"]
        assert moved["fromDepartment"]["id"] == gid(departments_[number % 2]), moved
        assert moved["toDepartment"]["id"] == gid(departments_[(number + 1) % 2]), moved
        assert moved["employee"]["version"] == version + 1, moved
        version += 1
    assert audit_actions(tenant).count("employee.move") == CONCURRENT_ROUNDS
    print(f"\n{CONCURRENT_ROUNDS} rounds of {CONCURRENT_ATTEMPTS}: {waits} attempts told the first was in progress")
