"""applyToJob, withdrawApplication, setApplicationStatus over HTTP."""

from __future__ import annotations

import pytest

from datastore.kinds.entities import Application, ApplicationStatus, Employee, Role
from datastore.table.pagination import PageRequest
from datastore.tenants import applications, departments, employees, jobs
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.schema.mutations.documents import (
    APPLY,
    SET_STATUS,
    UNKNOWN_ULID,
    WITHDRAW,
    error,
    gid,
    manager_of,
    open_job,
)


def applications_of(tenant: Tenant, job_id: str) -> list[Application]:
    return run(applications.list_job_applications(tenant.table, job_id, PageRequest(first=100))).items


def applied(tenant: Tenant, status: ApplicationStatus = ApplicationStatus.APPLIED) -> Application:
    job = open_job(tenant, tenant.department())
    application = run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id))
    if status is ApplicationStatus.APPLIED:
        return application
    if status is not ApplicationStatus.REVIEWING:
        run(
            applications.set_application_status(
                tenant.table, job.job_id, application.app_id, ApplicationStatus.REVIEWING
            )
        )
    return run(applications.set_application_status(tenant.table, job.job_id, application.app_id, status))


def applicant(tenant: Tenant, application: Application) -> Employee:
    found = run(employees.get_employee(tenant.table, application.emp_id))
    assert found is not None
    return found


# --- applyToJob -------------------------------------------------------------------------


@pytest.mark.parametrize("role", list(Role))
def test_apply_to_job__as_self_in_every_role(api: Api, tenant: Tenant, role: Role) -> None:
    job = open_job(tenant, tenant.department())
    me = tenant.admin if role is Role.ADMIN else tenant.employee(role=role)
    data = api.as_(me).data(APPLY, {"input": {"jobPostingId": gid(job)}})["applyToJob"]["application"]
    assert (data["status"], data["employee"], data["jobPosting"]) == ("APPLIED", {"id": gid(me)}, {"id": gid(job)})
    assert [a.emp_id for a in applications_of(tenant, job.job_id)] == [me.emp_id]


def test_apply_to_job__twice__is_conflict(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    me = api.as_(tenant.employee())
    me.data(APPLY, {"input": {"jobPostingId": gid(job)}})
    assert error(me.query(APPLY, {"input": {"jobPostingId": gid(job)}}))["extensions"]["code"] == "CONFLICT"
    assert len(applications_of(tenant, job.job_id)) == 1


@pytest.mark.parametrize("state", ["closed", "draft"])
def test_apply_to_job__not_open__is_conflict(api: Api, tenant: Tenant, state: str) -> None:
    if state == "closed":
        job = run(jobs.close_job(tenant.table, open_job(tenant, tenant.department()).job_id))
    else:
        job = run(jobs.create_job(tenant.table, department_id=tenant.department().dept_id, title="T"))
    body = api.as_(tenant.employee()).query(APPLY, {"input": {"jobPostingId": gid(job)}})
    assert error(body)["extensions"]["code"] == "CONFLICT"
    assert applications_of(tenant, job.job_id) == []


def test_apply_to_job__terminated_employee__is_unauthenticated(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    gone = run(employees.terminate_employee(tenant.table, tenant.employee().emp_id))
    body = api.as_(gone).query(APPLY, {"input": {"jobPostingId": gid(job)}})
    assert error(body)["extensions"]["code"] == "UNAUTHENTICATED"
    assert applications_of(tenant, job.job_id) == []


@pytest.mark.parametrize("kind", ["unknown", "other tenant", "other type"])
def test_apply_to_job__not_found(api: Api, tenant: Tenant, make_tenant: TenantFactory, kind: str) -> None:
    other = make_tenant()
    theirs = open_job(other, other.department())
    target = {
        "unknown": ids.encode("JobPosting", UNKNOWN_ULID),
        "other tenant": gid(theirs),
        "other type": gid(tenant.department()),
    }[kind]
    body = api.as_(tenant.employee()).query(APPLY, {"input": {"jobPostingId": target}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert applications_of(other, theirs.job_id) == []


def test_apply_to_job__malformed_id__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.as_(tenant.employee()).query(APPLY, {"input": {"jobPostingId": "**"}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.jobPostingId"}


def test_apply_to_job__platform_operator__not_enough_permissions(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    assert error(api.platform.query(APPLY, {"input": {"jobPostingId": gid(job)}}))["extensions"]["code"] == "FORBIDDEN"
    assert applications_of(tenant, job.job_id) == []


# --- withdrawApplication ----------------------------------------------------------------


@pytest.mark.parametrize("by", ["applicant", "admin"])
def test_withdraw_application(api: Api, tenant: Tenant, by: str) -> None:
    application = applied(tenant, ApplicationStatus.REVIEWING)
    caller = applicant(tenant, application) if by == "applicant" else tenant.admin
    data = api.as_(caller).data(WITHDRAW, {"input": {"id": gid(application)}})["withdrawApplication"]["application"]
    assert data["status"] == "WITHDRAWN"
    assert [a.status for a in applications_of(tenant, application.job_id)] == [ApplicationStatus.WITHDRAWN]


@pytest.mark.parametrize(
    "status", [ApplicationStatus.WITHDRAWN, ApplicationStatus.REJECTED, ApplicationStatus.ACCEPTED]
)
def test_withdraw_application__final_status__is_bad_user_input(
    api: Api, tenant: Tenant, status: ApplicationStatus
) -> None:
    application = applied(tenant)
    if status is ApplicationStatus.WITHDRAWN:
        application = run(applications.withdraw_application(tenant.table, application.job_id, application.app_id))
    else:
        application = applied(tenant, status)
    body = api.as_(applicant(tenant, application)).query(WITHDRAW, {"input": {"id": gid(application)}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.id"}
    assert [a.status for a in applications_of(tenant, application.job_id)] == [status]


@pytest.mark.parametrize("who", ["another employee", "the department's manager"])
def test_withdraw_application__not_enough_permissions(api: Api, tenant: Tenant, who: str) -> None:
    application = applied(tenant)
    job = run(jobs.get_job(tenant.table, application.job_id))
    dept = None if job is None else run(departments.get_department(tenant.table, job.department_id))
    assert dept is not None
    caller = tenant.employee() if who == "another employee" else manager_of(tenant, dept)
    body = api.as_(caller).query(WITHDRAW, {"input": {"id": gid(application)}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert [a.status for a in applications_of(tenant, application.job_id)] == [ApplicationStatus.APPLIED]


def test_withdraw_application__other_tenants__not_found(api: Api, tenant: Tenant, make_tenant: TenantFactory) -> None:
    other = make_tenant()
    theirs = applied(other)
    body = api.admin_of(tenant).query(WITHDRAW, {"input": {"id": gid(theirs)}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert [a.status for a in applications_of(other, theirs.job_id)] == [ApplicationStatus.APPLIED]


def test_withdraw_application__id_of_another_type__not_found(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(WITHDRAW, {"input": {"id": gid(tenant.admin)}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"


# --- setApplicationStatus ---------------------------------------------------------------


def test_set_application_status__admin_reviews(api: Api, tenant: Tenant) -> None:
    application = applied(tenant)
    data = api.admin_of(tenant).data(SET_STATUS, {"input": {"id": gid(application), "status": "REVIEWING"}})
    assert data["setApplicationStatus"]["application"]["status"] == "REVIEWING"
    assert [a.status for a in applications_of(tenant, application.job_id)] == [ApplicationStatus.REVIEWING]


def test_set_application_status__the_departments_manager_accepts(api: Api, tenant: Tenant) -> None:
    dept = tenant.department()
    job = open_job(tenant, dept)
    application = run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id))
    run(applications.set_application_status(tenant.table, job.job_id, application.app_id, ApplicationStatus.REVIEWING))
    data = api.as_(manager_of(tenant, dept)).data(SET_STATUS, {"input": {"id": gid(application), "status": "ACCEPTED"}})
    assert data["setApplicationStatus"]["application"]["status"] == "ACCEPTED"
    assert [a.status for a in applications_of(tenant, job.job_id)] == [ApplicationStatus.ACCEPTED]


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (ApplicationStatus.REJECTED, "ACCEPTED"),
        (ApplicationStatus.APPLIED, "ACCEPTED"),
        (ApplicationStatus.ACCEPTED, "REVIEWING"),
        (ApplicationStatus.APPLIED, "WITHDRAWN"),
    ],
)
def test_set_application_status__disallowed_transition__is_bad_user_input(
    api: Api, tenant: Tenant, start: ApplicationStatus, target: str
) -> None:
    application = applied(tenant, start)
    body = api.admin_of(tenant).query(SET_STATUS, {"input": {"id": gid(application), "status": target}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.status"}
    assert [a.status for a in applications_of(tenant, application.job_id)] == [start]


@pytest.mark.parametrize("who", ["applicant", "employee", "manager of another department"])
def test_set_application_status__not_enough_permissions(api: Api, tenant: Tenant, who: str) -> None:
    application = applied(tenant)
    caller = {
        "applicant": lambda: applicant(tenant, application),
        "employee": lambda: tenant.employee(),
        "manager of another department": lambda: manager_of(tenant, tenant.department("Elsewhere")),
    }[who]()
    body = api.as_(caller).query(SET_STATUS, {"input": {"id": gid(application), "status": "REJECTED"}})
    assert error(body)["extensions"]["code"] == "FORBIDDEN"
    assert [a.status for a in applications_of(tenant, application.job_id)] == [ApplicationStatus.APPLIED]


@pytest.mark.parametrize("kind", ["unknown application", "unknown job", "malformed"])
def test_set_application_status__not_found(api: Api, tenant: Tenant, kind: str) -> None:
    application = applied(tenant)
    target = {
        "unknown application": ids.encode("Application", application.job_id, UNKNOWN_ULID),
        "unknown job": ids.encode("Application", UNKNOWN_ULID, application.app_id),
        "malformed": ids.encode("Application", application.job_id),
    }[kind]
    body = api.admin_of(tenant).query(SET_STATUS, {"input": {"id": target, "status": "REVIEWING"}})
    assert error(body)["extensions"]["code"] == "NOT_FOUND"
    assert [a.status for a in applications_of(tenant, application.job_id)] == [ApplicationStatus.APPLIED]
