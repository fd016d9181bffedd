"""createJobPosting, updateJobPosting, publishJobPosting, closeJobPosting over HTTP."""

from __future__ import annotations

import pytest

from datastore.kinds.entities import JobPosting, Role
from datastore.table.pagination import PageRequest
from datastore.tenants import jobs
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.schema.mutations.documents import (
    CLOSE_JOB,
    CREATE_JOB,
    PUBLISH_JOB,
    UNKNOWN_ULID,
    UPDATE_JOB,
    error,
    gid,
    manager_of,
    open_job,
    raw_id,
)

OPEN_JOBS = "{ organization { jobPostings(status: OPEN) { edges { node { id } } } } }"


def stored(tenant: Tenant, job: JobPosting) -> JobPosting | None:
    return run(jobs.get_job(tenant.table, job.job_id, consistent=True))


def all_jobs(tenant: Tenant) -> list[JobPosting]:
    return run(jobs.list_jobs(tenant.table, PageRequest(first=100))).items


def open_job_ids(api: Api, tenant: Tenant) -> list[str]:
    edges = api.admin_of(tenant).data(OPEN_JOBS)["organization"]["jobPostings"]["edges"]
    return [edge["node"]["id"] for edge in edges]


# --- createJobPosting -------------------------------------------------------------------


def test_create_job_posting__is_a_draft(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    data = api.admin_of(tenant).data(
        CREATE_JOB, {"input": {"departmentId": gid(dept), "title": " Engineer ", "description": "Build"}}
    )["createJobPosting"]["jobPosting"]
    assert (data["title"], data["description"], data["status"], data["version"]) == ("Engineer", "Build", "DRAFT", 1)
    assert data["department"] == {"id": gid(dept)} and data["postedAt"] is None
    job = run(jobs.get_job(tenant.table, raw_id(data["id"])[0]))
    assert job is not None and job.status.value == "draft"
    assert open_job_ids(api, tenant) == []


@pytest.mark.parametrize(("title", "reason"), [("", "blank"), ("t" * 201, "at most 200")])
def test_create_job_posting__bad_title__is_bad_user_input(api: Api, tenant: Tenant, title: str, reason: str) -> None:
    dept = tenant.department("Eng")
    found = error(api.admin_of(tenant).query(CREATE_JOB, {"input": {"departmentId": gid(dept), "title": title}}))
    assert found["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.title"}
    assert reason in found["message"]
    assert all_jobs(tenant) == []


def test_create_job_posting__unknown_department__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(
        CREATE_JOB, {"input": {"departmentId": ids.encode("Department", UNKNOWN_ULID), "title": "T"}}
    )
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.departmentId"}
    assert all_jobs(tenant) == []


def test_create_job_posting__department_id_of_another_type__not_found(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(CREATE_JOB, {"input": {"departmentId": gid(tenant.admin), "title": "T"}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert all_jobs(tenant) == []


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_create_job_posting__not_enough_permissions(api: Api, tenant: Tenant, role: Role) -> None:
    dept = tenant.department("Eng")
    caller = manager_of(tenant, dept) if role is Role.MANAGER else tenant.employee(dept)
    body = api.as_(caller).query(CREATE_JOB, {"input": {"departmentId": gid(dept), "title": "T"}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert all_jobs(tenant) == []


# --- updateJobPosting -------------------------------------------------------------------


def test_update_job_posting__changes_title_and_department(api: Api, tenant: Tenant) -> None:
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    job = open_job(tenant, eng)
    data = api.admin_of(tenant).data(
        UPDATE_JOB,
        {"input": {"id": gid(job), "expectedVersion": job.version, "title": "Staff", "departmentId": gid(ops)}},
    )["updateJobPosting"]["jobPosting"]
    assert (data["title"], data["department"], data["version"], data["status"]) == (
        "Staff",
        {"id": gid(ops)},
        job.version + 1,
        "OPEN",
    )
    after = stored(tenant, job)
    assert after is not None and (after.title, after.department_id) == ("Staff", ops.dept_id)


def test_update_job_posting__stale_version__is_conflict(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department("Eng"))
    body = api.admin_of(tenant).query(UPDATE_JOB, {"input": {"id": gid(job), "expectedVersion": 1, "title": "X"}})
    assert error(body)["extensions"] == {"code": "CONFLICT", "currentVersion": job.version}
    assert stored(tenant, job) == job


def test_update_job_posting__unknown_department__changes_nothing(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department("Eng"))
    body = api.admin_of(tenant).query(
        UPDATE_JOB,
        {
            "input": {
                "id": gid(job),
                "expectedVersion": job.version,
                "departmentId": ids.encode("Department", UNKNOWN_ULID),
            }
        },
    )
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.departmentId"}
    assert stored(tenant, job) == job


def test_update_job_posting__closed__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    closed = run(jobs.close_job(tenant.table, open_job(tenant, tenant.department("Eng")).job_id))
    body = api.admin_of(tenant).query(
        UPDATE_JOB, {"input": {"id": gid(closed), "expectedVersion": closed.version, "title": "X"}}
    )
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.id"}
    assert stored(tenant, closed) == closed


@pytest.mark.parametrize("kind", ["unknown", "other tenant", "other type"])
def test_update_job_posting__not_found(api: Api, tenant: Tenant, make_tenant: TenantFactory, kind: str) -> None:
    if kind == "other tenant":
        other = make_tenant()
        target = gid(open_job(other, other.department()))
    else:
        target = ids.encode("JobPosting", UNKNOWN_ULID) if kind == "unknown" else gid(tenant.department())
    body = api.admin_of(tenant).query(UPDATE_JOB, {"input": {"id": target, "expectedVersion": 2, "title": "X"}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"


def test_update_job_posting__malformed_id__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(UPDATE_JOB, {"input": {"id": "@@", "expectedVersion": 2}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.id"}


def test_update_job_posting__not_enough_permissions(api: Api, tenant: Tenant) -> None:
    dept = tenant.department("Eng")
    job = open_job(tenant, dept)
    body = api.as_(manager_of(tenant, dept)).query(
        UPDATE_JOB, {"input": {"id": gid(job), "expectedVersion": job.version, "title": "X"}}
    )
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert stored(tenant, job) == job


# --- publishJobPosting ------------------------------------------------------------------


def test_publish_job_posting__opens_it_into_the_open_index(api: Api, tenant: Tenant) -> None:
    draft = run(jobs.create_job(tenant.table, department_id=tenant.department().dept_id, title="T"))
    data = api.admin_of(tenant).data(PUBLISH_JOB, {"input": {"id": gid(draft), "expectedVersion": draft.version}})[
        "publishJobPosting"
    ]["jobPosting"]
    assert (data["status"], data["version"]) == ("OPEN", draft.version + 1)
    assert data["postedAt"] is not None
    assert open_job_ids(api, tenant) == [gid(draft)]


@pytest.mark.parametrize("close", [False, True])
def test_publish_job_posting__not_a_draft__is_bad_user_input(api: Api, tenant: Tenant, close: bool) -> None:
    job = open_job(tenant, tenant.department())
    if close:
        job = run(jobs.close_job(tenant.table, job.job_id))
    found = error(api.admin_of(tenant).query(PUBLISH_JOB, {"input": {"id": gid(job)}}))
    assert found["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.id"}
    assert stored(tenant, job) == job
    assert open_job_ids(api, tenant) == ([] if close else [gid(job)])


def test_publish_job_posting__stale_version__is_conflict(api: Api, tenant: Tenant) -> None:
    draft = run(jobs.create_job(tenant.table, department_id=tenant.department().dept_id, title="T"))
    body = api.admin_of(tenant).query(PUBLISH_JOB, {"input": {"id": gid(draft), "expectedVersion": 7}})
    assert error(body)["extensions"] == {"code": "CONFLICT", "currentVersion": 1}
    assert stored(tenant, draft) == draft


def test_publish_job_posting__unknown__not_found(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(PUBLISH_JOB, {"input": {"id": ids.encode("JobPosting", UNKNOWN_ULID)}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"


def test_publish_job_posting__not_enough_permissions(api: Api, tenant: Tenant) -> None:
    draft = run(jobs.create_job(tenant.table, department_id=tenant.department().dept_id, title="T"))
    body = api.as_(tenant.employee()).query(PUBLISH_JOB, {"input": {"id": gid(draft)}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert stored(tenant, draft) == draft


# --- closeJobPosting --------------------------------------------------------------------


def test_close_job_posting__leaves_the_open_index(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    data = api.admin_of(tenant).data(CLOSE_JOB, {"input": {"id": gid(job), "expectedVersion": job.version}})[
        "closeJobPosting"
    ]["jobPosting"]
    assert (data["status"], data["version"]) == ("CLOSED", job.version + 1)
    assert data["closedAt"] is not None
    assert open_job_ids(api, tenant) == []


def test_close_job_posting__twice__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    closed = run(jobs.close_job(tenant.table, open_job(tenant, tenant.department()).job_id))
    body = api.admin_of(tenant).query(CLOSE_JOB, {"input": {"id": gid(closed)}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.id"}
    assert stored(tenant, closed) == closed


def test_close_job_posting__stale_version__is_conflict(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    body = api.admin_of(tenant).query(CLOSE_JOB, {"input": {"id": gid(job), "expectedVersion": 1}})
    assert error(body)["extensions"] == {"code": "CONFLICT", "currentVersion": job.version}
    assert open_job_ids(api, tenant) == [gid(job)]


def test_close_job_posting__other_tenants_job__not_found(api: Api, tenant: Tenant, make_tenant: TenantFactory) -> None:
    other = make_tenant()
    theirs = open_job(other, other.department())
    body = api.admin_of(tenant).query(CLOSE_JOB, {"input": {"id": gid(theirs)}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert stored(other, theirs) == theirs


def test_close_job_posting__not_enough_permissions(api: Api, tenant: Tenant) -> None:
    dept = tenant.department()
    job = open_job(tenant, dept)
    body = api.as_(manager_of(tenant, dept)).query(CLOSE_JOB, {"input": {"id": gid(job)}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert stored(tenant, job) == job
