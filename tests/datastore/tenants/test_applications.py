from __future__ import annotations

import pytest

from datastore.aws import calls
from datastore.errors import Conflict, InvalidInput, NotFound
from datastore.kinds import layout
from datastore.kinds.entities import Application, ApplicationStatus, Department, Employee, JobPosting
from datastore.table import by_id
from datastore.table.pagination import PageRequest
from datastore.tenants import applications, employees, jobs
from datastore.values import ids, validation
from tests.blocking import run
from tests.conftest import Tenant

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@pytest.fixture
def dept(tenant: Tenant) -> Department:
    return tenant.department()


@pytest.fixture
def job(tenant: Tenant, dept: Department) -> JobPosting:
    return run(
        jobs.publish_job(tenant.table, run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T")).job_id)
    )


@pytest.fixture
def applicant(tenant: Tenant, dept: Department) -> Employee:
    return tenant.employee(dept)


def job_applications(tenant: Tenant, job_id: str) -> list[Application]:
    return list(run(applications.list_job_applications(tenant.table, job_id, PageRequest())).items)


def test_apply_to_job__one_transaction_then_readable(tenant: Tenant, job: JobPosting, applicant: Employee) -> None:
    with calls.listening() as log:
        app = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    assert log.operations() == ["TransactWriteItems"]
    assert (app.job_id, app.emp_id, app.status) == (job.job_id, applicant.emp_id, ApplicationStatus.APPLIED)
    assert run(applications.get_application(tenant.table, job.job_id, app.app_id)) == app


@pytest.mark.parametrize("descending", [True, False], ids=["newest_first", "oldest_first"])
def test_list_job_applications__ap10__one_query(
    tenant: Tenant, dept: Department, job: JobPosting, descending: bool
) -> None:
    made = [run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee(dept).emp_id)) for _ in range(3)]
    with calls.listening() as log:
        page = run(applications.list_job_applications(tenant.table, job.job_id, PageRequest(descending=descending)))
    assert list(page.items) == (made[::-1] if descending else made)
    assert log.operations() == ["Query"]
    assert "IndexName" not in log.calls[0].params


@pytest.mark.parametrize("descending", [True, False], ids=["newest_first", "oldest_first"])
def test_list_employee_applications__ap11__one_query_on_gsi1(
    tenant: Tenant, dept: Department, applicant: Employee, descending: bool
) -> None:
    posted = [
        run(
            jobs.publish_job(
                tenant.table, run(jobs.create_job(tenant.table, department_id=dept.dept_id, title=f"J{n}")).job_id
            )
        )
        for n in range(3)
    ]
    made = [run(applications.apply_to_job(tenant.table, j.job_id, applicant.emp_id)) for j in posted]
    run(applications.apply_to_job(tenant.table, posted[0].job_id, tenant.employee(dept).emp_id))  # someone else's
    with calls.listening() as log:
        page = run(
            applications.list_employee_applications(tenant.table, applicant.emp_id, PageRequest(descending=descending))
        )
    assert list(page.items) == (made[::-1] if descending else made)
    assert log.operations() == ["Query"]
    assert log.calls[0].params["IndexName"] == "GSI1"


def test_applications_by_id__batch_in_order_with_misses(tenant: Tenant, job: JobPosting, applicant: Employee) -> None:
    app = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    with calls.listening() as log:
        found = run(
            by_id.get_many(tenant.table, layout.APPLICATION, [(job.job_id, ids.new_id()), (job.job_id, app.app_id)])
        )
    assert found == [None, app]
    assert log.operations() == ["BatchGetItem"]


def test_apply_to_job__twice__conflict_and_one_application(
    tenant: Tenant, job: JobPosting, applicant: Employee
) -> None:
    first = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    with pytest.raises(Conflict, match="already applied"):
        run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    assert job_applications(tenant, job.job_id) == [first]


@pytest.mark.parametrize("state", ["draft", "closed"])
def test_apply_to_job__job_not_open__conflict_and_nothing_written(
    tenant: Tenant, dept: Department, applicant: Employee, state: str
) -> None:
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))
    if state == "closed":
        run(jobs.publish_job(tenant.table, job.job_id))
        run(jobs.close_job(tenant.table, job.job_id))
    with pytest.raises(Conflict, match=f"the job is {state}"):
        run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    assert job_applications(tenant, job.job_id) == []
    assert list(run(applications.list_employee_applications(tenant.table, applicant.emp_id, PageRequest())).items) == []


def test_apply_to_job__unknown_job__not_found_and_nothing_written(tenant: Tenant, applicant: Employee) -> None:
    unknown = ids.new_id()
    with pytest.raises(NotFound) as raised:
        run(applications.apply_to_job(tenant.table, unknown, applicant.emp_id))
    assert raised.value.entity is JobPosting
    assert job_applications(tenant, unknown) == []


def test_apply_to_job__unknown_employee__not_found_and_nothing_written(tenant: Tenant, job: JobPosting) -> None:
    with pytest.raises(NotFound) as raised:
        run(applications.apply_to_job(tenant.table, job.job_id, ids.new_id()))
    assert raised.value.entity is Employee
    assert job_applications(tenant, job.job_id) == []


def test_apply_to_job__inactive_employee__conflict(tenant: Tenant, job: JobPosting, applicant: Employee) -> None:
    run(employees.terminate_employee(tenant.table, applicant.emp_id))
    with pytest.raises(Conflict, match="inactive"):
        run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    assert job_applications(tenant, job.job_id) == []


def test_withdraw_application__final(tenant: Tenant, job: JobPosting, applicant: Employee) -> None:
    app = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    withdrawn = run(applications.withdraw_application(tenant.table, job.job_id, app.app_id))
    assert withdrawn.status is ApplicationStatus.WITHDRAWN
    assert run(applications.get_application(tenant.table, job.job_id, app.app_id)) == withdrawn
    with pytest.raises(InvalidInput, match="cannot go from withdrawn"):
        run(applications.withdraw_application(tenant.table, job.job_id, app.app_id))


def test_set_application_status__allowed_path(tenant: Tenant, job: JobPosting, applicant: Employee) -> None:
    app = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    for status in (ApplicationStatus.REVIEWING, ApplicationStatus.ACCEPTED):
        changed = run(applications.set_application_status(tenant.table, job.job_id, app.app_id, status))
        assert changed.status is status
    assert run(applications.get_application(tenant.table, job.job_id, app.app_id, consistent=True)) == changed


def test_set_application_status__forbidden_transition__invalid_input_and_no_write(
    tenant: Tenant, job: JobPosting, applicant: Employee
) -> None:
    app = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    with calls.listening() as log, pytest.raises(InvalidInput, match="cannot go from applied to accepted"):
        run(applications.set_application_status(tenant.table, job.job_id, app.app_id, ApplicationStatus.ACCEPTED))
    assert not WRITES & set(log.operations())
    assert run(applications.get_application(tenant.table, job.job_id, app.app_id, consistent=True)) == app


def test_set_application_status__withdrawn__reserved_for_the_applicant(
    tenant: Tenant, job: JobPosting, applicant: Employee
) -> None:
    app = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    with calls.listening() as log, pytest.raises(InvalidInput, match="only the applicant"):
        run(applications.set_application_status(tenant.table, job.job_id, app.app_id, ApplicationStatus.WITHDRAWN))
    assert log.operations() == []


def test_set_application_status__unknown_enum_value__invalid_input_and_no_call(tenant: Tenant, job: JobPosting) -> None:
    with calls.listening() as log, pytest.raises(InvalidInput) as raised:
        run(
            applications.set_application_status(
                tenant.table, job.job_id, ids.new_id(), validation.choice(ApplicationStatus, "hired", "status")
            )
        )
    assert raised.value.field == "status"
    assert log.operations() == []


def test_set_application_status__unknown_application__not_found(tenant: Tenant, job: JobPosting) -> None:
    with pytest.raises(NotFound):
        run(applications.set_application_status(tenant.table, job.job_id, ids.new_id(), ApplicationStatus.REVIEWING))
