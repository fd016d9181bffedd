from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from datastore import ids, items
from datastore.entities import (
    Application,
    ApplicationStatus,
    Department,
    Employee,
    EmployeeStatus,
    JobPosting,
    JobStatus,
    Organization,
    OrganizationStatus,
    Plan,
    Role,
    Subscription,
)

ORG = ids.new_id()
WHEN = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)


def employee(**changes: object) -> Employee:
    values: dict[str, object] = {
        "org_id": ORG,
        "emp_id": ids.new_id(),
        "email": "e@example.com",
        "first_name": "Erin",
        "last_name": "Evans",
        "department_id": ids.new_id(),
        "role": Role.MANAGER,
        "status": EmployeeStatus.ACTIVE,
        "hired_at": WHEN,
        "terminated_at": None,
        "version": 3,
    }
    values.update(changes)
    return Employee(**values)  # type: ignore[arg-type]


def job(status: JobStatus, posted_at: datetime | None = WHEN) -> JobPosting:
    return JobPosting(
        org_id=ORG,
        job_id=ids.new_id(),
        department_id=ids.new_id(),
        title="Engineer",
        description="",
        status=status,
        posted_at=posted_at,
        closed_at=WHEN + timedelta(days=1) if status is JobStatus.CLOSED else None,
        version=2,
    )


def test_timestamp__utc_milliseconds_with_z() -> None:
    assert items.timestamp(WHEN) == "2024-05-06T07:08:09.123Z"
    local = WHEN.astimezone(timezone(timedelta(hours=2)))
    assert items.timestamp(local) == "2024-05-06T07:08:09.123Z"


def test_timestamp__text_order_is_time_order() -> None:
    moments = [WHEN + timedelta(milliseconds=step * 997) for step in range(50)]
    assert sorted(moments, key=items.timestamp) == moments


def test_now__round_trips_through_the_stored_form() -> None:
    moment = items.now()
    assert items.parse_timestamp(items.timestamp(moment)) == moment


def test_organization__round_trip_and_platform_index() -> None:
    org = Organization(ORG, "Acme Corp", Plan.PRO, OrganizationStatus.ACTIVE, WHEN)
    item = items.organization_item(org)
    assert items.organization_from(item) == org
    assert item["GSI1PK"] == {"S": "ORGS"}
    assert item["GSI1SK"] == {"S": f"Acme Corp#{ORG}"}


@pytest.mark.parametrize(("billing", "renews"), [(None, None), ("cus_123", WHEN + timedelta(days=30))])
def test_subscription__round_trip(billing: str | None, renews: datetime | None) -> None:
    sub = Subscription(ORG, Plan.ENTERPRISE, 2000, billing, renews)
    item = items.subscription_item(sub)
    assert items.subscription_from(item) == sub
    assert ("billingCustomerId" in item) is (billing is not None)


@pytest.mark.parametrize("manager", [None, ids.new_id()])
def test_department__round_trip(manager: str | None) -> None:
    dept = Department(ORG, ids.new_id(), "Sales", manager, 4)
    assert items.department_from(items.department_item(dept)) == dept


@pytest.mark.parametrize(
    "emp",
    [
        employee(),
        employee(department_id=None),
        employee(status=EmployeeStatus.INACTIVE, terminated_at=WHEN + timedelta(days=3)),
    ],
)
def test_employee__round_trip(emp: Employee) -> None:
    item = items.employee_item(emp)
    assert items.employee_from(item) == emp
    assert item["GSI1PK"] == {"S": f"ORG#{ORG}#EMP"}
    assert item["GSI1SK"] == {"S": f"2024-05-06T07:08:09.123Z#{emp.emp_id}"}


def test_membership__carries_the_whole_employee() -> None:
    emp = employee()
    item = items.membership_item(emp)
    assert item["PK"] == {"S": f"ORG#{ORG}#DEPT#{emp.department_id}"}
    assert "GSI1PK" not in item
    assert items.employee_from(item) == emp


def test_membership__without_department__is_refused() -> None:
    with pytest.raises(ValueError):
        items.membership_item(employee(department_id=None))


def test_identity_and_pointer__name_the_owner() -> None:
    emp = employee()
    identity = items.identity_from(items.identity_item(emp))
    assert (identity.email, identity.org_id, identity.emp_id) == (emp.email, ORG, emp.emp_id)
    pointer = items.email_pointer_item(emp)
    assert pointer["PK"] == {"S": f"ORG#{ORG}"}
    assert items.emp_id_of_pointer(pointer) == emp.emp_id


def test_job__only_an_open_job_is_in_the_open_index() -> None:
    draft = job(JobStatus.DRAFT, posted_at=None)
    opened = job(JobStatus.OPEN)
    closed = job(JobStatus.CLOSED)
    for posting in (draft, opened, closed):
        assert items.job_from(items.job_item(posting)) == posting
    assert "GSI1PK" not in items.job_item(draft)
    assert "GSI1PK" not in items.job_item(closed)
    assert items.job_item(opened)["GSI1PK"] == {"S": f"ORG#{ORG}#OPEN"}
    assert items.job_item(opened)["GSI1SK"] == {"S": f"JOB#2024-05-06T07:08:09.123Z#{opened.job_id}"}


def test_open_job_index__without_posted_at__is_refused() -> None:
    with pytest.raises(ValueError):
        items.open_job_index_attributes(job(JobStatus.OPEN, posted_at=None))


def test_application__round_trip_and_employee_index() -> None:
    app = Application(ORG, ids.new_id(), ids.new_id(), ids.new_id(), ApplicationStatus.REVIEWING, WHEN)
    item = items.application_item(app)
    assert items.application_from(item) == app
    assert item["PK"] == {"S": f"ORG#{ORG}#JOB#{app.job_id}"}
    assert item["GSI1PK"] == {"S": f"ORG#{ORG}#EMP#{app.emp_id}"}
    applicant = items.applicant_item(app)
    assert applicant["SK"] == {"S": f"APPLICANT#{app.emp_id}"}
    assert applicant["PK"] == item["PK"]
