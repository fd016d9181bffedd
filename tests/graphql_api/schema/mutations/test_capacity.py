"""The items each mutation's transaction writes and the WCU DynamoDB reports for it.

Run with ``-s`` to print the table. Each row is one mutation over HTTP, its one
TransactWriteItems call as the ``call_log`` fixture saw it. Every transaction carries the
audit event, and a keyed one (idempotencyKey) its idempotency record too; a transactional
write costs 2 WCU per item of up to 1 KB.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from datastore.aws import calls
from datastore.kinds.entities import ApplicationStatus
from datastore.tenants import applications, employees, jobs
from tests.blocking import run
from tests.conftest import Tenant, unique_domain
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.schema.mutations.documents import (
    APPLY,
    CLOSE_JOB,
    CREATE_DEPARTMENT,
    CREATE_EMPLOYEE,
    CREATE_JOB,
    CREATE_ORGANIZATION,
    MOVE_EMPLOYEE,
    PUBLISH_JOB,
    SET_STATUS,
    TERMINATE_EMPLOYEE,
    UPDATE_DEPARTMENT,
    UPDATE_EMPLOYEE,
    UPDATE_JOB,
    WITHDRAW,
    gid,
    open_job,
)

Plan = Callable[[Api, Tenant], tuple[GraphQLClient, str, dict[str, Any]]]


def _create_department(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    return api.admin_of(t), CREATE_DEPARTMENT, {"name": "Research"}


def _update_department(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    dept = t.department()
    boss = t.employee(dept)
    return api.admin_of(t), UPDATE_DEPARTMENT, {"id": gid(dept), "name": "New", "managerId": gid(boss)}


def _create_employee(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    dept = t.department()
    return (
        api.admin_of(t),
        CREATE_EMPLOYEE,
        {
            "email": t.email(f"cap{dept.dept_id.lower()}"),
            "firstName": "C",
            "lastName": "P",
            "departmentId": gid(dept),
        },
    )


def _update_employee_name(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    person = t.employee(t.department())
    return api.admin_of(t), UPDATE_EMPLOYEE, {"id": gid(person), "expectedVersion": 1, "firstName": "R"}


def _update_employee_email(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    person = t.employee(t.department())
    return (
        api.admin_of(t),
        UPDATE_EMPLOYEE,
        {"id": gid(person), "expectedVersion": 1, "email": t.email(f"moved{person.emp_id.lower()}")},
    )


def _move_employee(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    person = t.employee(t.department("A"))
    return api.admin_of(t), MOVE_EMPLOYEE, {"id": gid(person), "departmentId": gid(t.department("B"))}


def _terminate_employee(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    return api.admin_of(t), TERMINATE_EMPLOYEE, {"id": gid(t.employee(t.department()))}


def _create_job(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    return api.admin_of(t), CREATE_JOB, {"departmentId": gid(t.department()), "title": "T", "description": "D"}


def _update_job(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    job = open_job(t, t.department())
    return api.admin_of(t), UPDATE_JOB, {"id": gid(job), "expectedVersion": job.version, "title": "T2"}


def _publish_job(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    draft = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="T"))
    return api.admin_of(t), PUBLISH_JOB, {"id": gid(draft)}


def _close_job(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    return api.admin_of(t), CLOSE_JOB, {"id": gid(open_job(t, t.department()))}


def _apply(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    return api.as_(t.employee()), APPLY, {"jobPostingId": gid(open_job(t, t.department()))}


def _applied(t: Tenant) -> tuple[employees.Employee, applications.Application]:
    person = t.employee()
    return person, run(applications.apply_to_job(t.table, open_job(t, t.department()).job_id, person.emp_id))


def _withdraw(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    person, application = _applied(t)
    return api.as_(person), WITHDRAW, {"id": gid(application)}


def _set_status(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    _, application = _applied(t)
    return api.admin_of(t), SET_STATUS, {"id": gid(application), "status": ApplicationStatus.REVIEWING.name}


def _create_organization(api: Api, t: Tenant) -> tuple[GraphQLClient, str, dict[str, Any]]:
    return (
        api.platform,
        CREATE_ORGANIZATION,
        {
            "name": "Cap Org",
            "plan": "FREE",
            "emailDomains": [domain := unique_domain()],
            "adminEmail": f"capadmin@{domain}",
            "adminFirstName": "A",
            "adminLastName": "B",
        },
    )


# Every employee write also puts the employee's name entries (one per prefix of its folded
# names, and the directory's; README "Name search"): "C P" and the admin "A B" have 3, the
# tenant factory's "Test Person xxxxxx" 17; renaming it "R Person xxxxxx" puts 14 and deletes
# the 17 old ones (the first name is in every entry's sort key).
C_P, TEST_PERSON, R_PERSON = 3, 17, 14

# mutation, plan, keyed, items written, WCU as DynamoDB Local reports it (ReturnConsumedCapacity).
# DynamoDB Local does not price transactions as AWS does (2 WCU per item per KB); its totals
# are recorded here as it reports them, so a change in what a mutation writes shows up.
CASES: list[tuple[str, Plan, bool, int, float]] = [
    ("createDepartment", _create_department, False, 2, 2.0),
    ("updateDepartment (name + manager)", _update_department, False, 3, 2.0),
    ("createEmployee (in a department)", _create_employee, False, 7 + C_P, 6.0),
    ("updateEmployee (name)", _update_employee_name, False, 3 + R_PERSON + TEST_PERSON, 6.0),
    ("updateEmployee (email)", _update_employee_email, False, 8 + TEST_PERSON, 6.0),
    ("moveEmployee", _move_employee, False, 6 + TEST_PERSON, 6.0),
    ("terminateEmployee", _terminate_employee, False, 4 + TEST_PERSON, 6.0),
    ("createJobPosting", _create_job, False, 3, 2.0),
    ("updateJobPosting", _update_job, False, 2, 6.0),
    ("publishJobPosting", _publish_job, False, 2, 6.0),
    ("closeJobPosting", _close_job, False, 2, 6.0),
    ("applyToJob", _apply, False, 5, 6.0),
    ("withdrawApplication", _withdraw, False, 3, 6.0),  # + the job's counters
    ("setApplicationStatus", _set_status, False, 3, 6.0),  # + the job's counters
    ("createOrganization", _create_organization, False, 7 + C_P, 6.0),
    ("createDepartment + idempotencyKey", _create_department, True, 3, 2.0),
    ("applyToJob + idempotencyKey", _apply, True, 6, 6.0),
]

MEASURED: list[tuple[str, int, float]] = []


@pytest.mark.parametrize(("name", "plan", "keyed", "items", "wcu"), CASES, ids=[c[0] for c in CASES])
def test_capacity(api: Api, tenant: Tenant, name: str, plan: Plan, keyed: bool, items: int, wcu: float) -> None:
    client, document, variables = plan(api, tenant)
    if keyed:
        variables = {**variables, "idempotencyKey": f"cap-{tenant.org_id}"}
    with calls.listening() as log:
        body = client.query(document, {"input": variables})
    assert "errors" not in body, body["errors"]
    transactions = [c for c in log.snapshot() if c.operation == "TransactWriteItems"]
    assert len(transactions) == 1
    written = len(transactions[0].params["TransactItems"])
    MEASURED.append((name, written, transactions[0].write_units))
    assert (written, transactions[0].write_units) == (items, wcu)


def test_capacity__table() -> None:
    """Prints what the cases above measured (``pytest -s``)."""
    print(f"\n{'mutation':<40}{'items':>6}{'WCU':>7}")
    for name, written, units in MEASURED:
        print(f"{name:<40}{written:>6}{units:>7.1f}")
