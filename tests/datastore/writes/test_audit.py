"""The audit trail: one event per write, in the write's transaction, read newest first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from datastore.aws.calls import CallLog
from datastore.config import DEFAULT_RETENTION_DAYS
from datastore.errors import InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import ApplicationStatus, AuditEvent, FieldChange, Role
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenants import applications, departments, employees, jobs
from datastore.values import ids, items
from datastore.writes import audit
from datastore.writes.changes import Change
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.datastore.support import write_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def trail(table: Table, first: int = 100) -> list[AuditEvent]:
    return list(run(audit.list_audit_events(table, PageRequest(first=first))).items)


@dataclass(frozen=True)
class Expected:
    action: str
    entity_type: str
    entity_id: str
    # Exactly the fields that changed, with their before and after values.
    changes: dict[str, tuple[str | int | None, str | int | None]]
    before_version: int | None = None
    after_version: int | None = None


Scenario = Callable[[Tenant], Expected]


def create_department(t: Tenant) -> Expected:
    dept = run(departments.create_department(t.table, name="Research", manager_id=t.admin.emp_id))
    return Expected(
        "department.create",
        "Department",
        dept.dept_id,
        {
            "deptId": (None, dept.dept_id),
            "headcount": (None, 0),
            "managerId": (None, t.admin.emp_id),
            "name": (None, "Research"),
        },
    )


def update_department(t: Tenant) -> Expected:
    dept = t.department("Old name")
    run(departments.update_department(t.table, dept.dept_id, name="New name"))
    return Expected("department.update", "Department", dept.dept_id, {"name": ("Old name", "New name")})


def create_employee(t: Tenant) -> Expected:
    dept = t.department()
    emp = run(
        employees.create_employee(
            t.table,
            email=t.email("new.hire"),
            first_name="New",
            last_name="Hire",
            department_id=dept.dept_id,
            role=Role.EMPLOYEE,
        )
    )
    return Expected(
        "employee.create",
        "Employee",
        emp.emp_id,
        {
            "departmentId": (None, dept.dept_id),
            "email": (None, emp.email),
            "empId": (None, emp.emp_id),
            "firstName": (None, "New"),
            "hiredAt": (None, items.timestamp(emp.hired_at)),
            "lastName": (None, "Hire"),
            "role": (None, "employee"),
            "status": (None, "active"),
        },
        after_version=1,
    )


def update_employee(t: Tenant) -> Expected:
    emp = t.employee()
    run(employees.update_employee(t.table, emp.emp_id, expected_version=1, first_name="Renamed", role=Role.MANAGER))
    return Expected(
        "employee.update",
        "Employee",
        emp.emp_id,
        {"firstName": ("Test", "Renamed"), "role": ("employee", "manager")},
        1,
        2,
    )


def move_employee(t: Tenant) -> Expected:
    source, target = t.department("Source"), t.department("Target")
    emp = t.employee(source)
    run(employees.move_employee(t.table, emp.emp_id, target.dept_id))
    return Expected(
        "employee.move",
        "Employee",
        emp.emp_id,
        {"departmentId": (source.dept_id, target.dept_id)},
        1,
        2,
    )


def terminate_employee(t: Tenant) -> Expected:
    emp = t.employee(t.department())
    done = run(employees.terminate_employee(t.table, emp.emp_id))
    assert done.terminated_at is not None
    return Expected(
        "employee.terminate",
        "Employee",
        emp.emp_id,
        {
            "status": ("active", "inactive"),
            "terminatedAt": (None, items.timestamp(done.terminated_at)),
        },
        1,
        2,
    )


def create_job(t: Tenant) -> Expected:
    dept = t.department()
    job = run(jobs.create_job(t.table, department_id=dept.dept_id, title="Engineer"))
    return Expected(
        "job.create",
        "JobPosting",
        job.job_id,
        {
            "departmentId": (None, dept.dept_id),
            "description": (None, ""),
            "jobId": (None, job.job_id),
            "status": (None, "draft"),
            "title": (None, "Engineer"),
        },
        after_version=1,
    )


def update_job(t: Tenant) -> Expected:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Engineer"))
    run(jobs.update_job(t.table, job.job_id, expected_version=1, description="Builds things"))
    return Expected("job.update", "JobPosting", job.job_id, {"description": ("", "Builds things")}, 1, 2)


def publish_job(t: Tenant) -> Expected:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Engineer"))
    published = run(jobs.publish_job(t.table, job.job_id))
    assert published.posted_at is not None
    return Expected(
        "job.publish",
        "JobPosting",
        job.job_id,
        {"postedAt": (None, items.timestamp(published.posted_at)), "status": ("draft", "open")},
        1,
        2,
    )


def close_job(t: Tenant) -> Expected:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Engineer"))
    closed = run(jobs.close_job(t.table, job.job_id))
    assert closed.closed_at is not None
    return Expected(
        "job.close",
        "JobPosting",
        job.job_id,
        {"closedAt": (None, items.timestamp(closed.closed_at)), "status": ("draft", "closed")},
        1,
        2,
    )


def _open_job(t: Tenant) -> str:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Engineer"))
    return run(jobs.publish_job(t.table, job.job_id)).job_id


def apply_to_job(t: Tenant) -> Expected:
    job_id, emp = _open_job(t), t.employee()
    app = run(applications.apply_to_job(t.table, job_id, emp.emp_id))
    return Expected(
        "application.apply",
        "Application",
        app.app_id,
        {
            "appId": (None, app.app_id),
            "empId": (None, emp.emp_id),
            "jobId": (None, job_id),
            "status": (None, "applied"),
            "submittedAt": (None, items.timestamp(app.submitted_at)),
        },
    )


def withdraw_application(t: Tenant) -> Expected:
    job_id, emp = _open_job(t), t.employee()
    app = run(applications.apply_to_job(t.table, job_id, emp.emp_id))
    run(applications.withdraw_application(t.table, job_id, app.app_id))
    return Expected("application.withdraw", "Application", app.app_id, {"status": ("applied", "withdrawn")})


def set_application_status(t: Tenant) -> Expected:
    job_id, emp = _open_job(t), t.employee()
    app = run(applications.apply_to_job(t.table, job_id, emp.emp_id))
    run(applications.set_application_status(t.table, job_id, app.app_id, ApplicationStatus.REVIEWING))
    return Expected("application.setStatus", "Application", app.app_id, {"status": ("applied", "reviewing")})


SCENARIOS: list[Scenario] = [
    create_department,
    update_department,
    create_employee,
    update_employee,
    move_employee,
    terminate_employee,
    create_job,
    update_job,
    publish_job,
    close_job,
    apply_to_job,
    withdraw_application,
    set_application_status,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_write__emits_exactly_one_event__with_its_changes(tenant: Tenant, scenario: Scenario) -> None:
    started = datetime.now(UTC) - timedelta(seconds=1)
    expected = scenario(tenant)
    events = trail(tenant.table)

    about = [e for e in events if e.entity_id == expected.entity_id and e.action == expected.action]
    assert len(about) == 1
    event = about[0]
    assert events[0] == event, "the write's event is the newest"
    assert (event.action, event.entity_type, event.entity_id) == (
        expected.action,
        expected.entity_type,
        expected.entity_id,
    )
    assert event.org_id == tenant.org_id
    assert event.actor_id == tenant.admin.emp_id
    assert started <= event.occurred_at <= datetime.now(UTC)
    assert event.changes == tuple(
        FieldChange(name, before, after) for name, (before, after) in sorted(expected.changes.items())
    )
    assert (event.before_version, event.after_version) == (
        expected.before_version,
        expected.after_version,
    )


def test_create_organization__opens_the_trail(tenant: Tenant) -> None:
    events = trail(tenant.table)

    assert len(events) == 1
    event = events[0]
    assert (event.action, event.entity_type, event.entity_id) == (
        "organization.create",
        "Organization",
        tenant.org_id,
    )
    assert event.actor_id is None
    assert FieldChange("name", None, tenant.organization.name) in event.changes


def test_trail__newest_first__one_query_per_page_within_a_month(tenant: Tenant, call_log: CallLog) -> None:
    depts = [tenant.department(f"Dept {i}") for i in range(5)]
    before = len(call_log.snapshot())

    page = run(audit.list_audit_events(tenant.table, PageRequest(first=3)))
    rest = run(audit.list_audit_events(tenant.table, PageRequest(first=3, after=page.end_cursor)))

    ids = [e.entity_id for e in [*page.items, *rest.items]]
    assert ids == [d.dept_id for d in reversed(depts)] + [tenant.org_id]
    assert page.has_next and not rest.has_next
    reads = call_log.snapshot()[before:]
    assert [c.operation for c in reads] == ["Query", "Query"]


def test_no_operation__no_event(tenant: Tenant) -> None:
    dept = tenant.department()
    emp = tenant.employee(dept)
    before = trail(tenant.table)

    run(employees.move_employee(tenant.table, emp.emp_id, dept.dept_id))

    assert trail(tenant.table) == before


def test_failing_last_item__leaves_no_event_and_no_partial_state(tenant: Tenant, call_log: CallLog) -> None:
    before = trail(tenant.table)
    missing_dept = ids.new_id()
    start = len(call_log.snapshot())

    with pytest.raises(InvalidInput, match="no such department"):
        run(
            employees.create_employee(
                tenant.table,
                email=tenant.email("ghost"),
                first_name="Ghost",
                last_name="Writer",
                department_id=missing_dept,
                role=Role.EMPLOYEE,
                idempotency_key="ghost-1",
            )
        )

    [transaction] = [c for c in call_log.snapshot()[start:] if c.operation == "TransactWriteItems"]
    last = transaction.params["TransactItems"][-1]
    assert last["Update"]["Key"] == layout.DEPARTMENT.key_at(tenant.org_id, missing_dept).wire()
    assert transaction.write_units == 0
    assert trail(tenant.table) == before
    assert run(employees.find_employee_id_by_email(tenant.table, tenant.email("ghost"))) is None
    assert run(tenant.table.get(layout.IDEMPOTENCY.key_at(tenant.org_id, "ghost-1"), consistent=True)) is None
    assert run(employees.list_employees(tenant.table, PageRequest(first=100))).items == [tenant.admin]


def _event_item(org_id: str, at: datetime, action: str) -> items.Item:
    change = Change(action, "Department", ids.new_id(), org_id, None, {"name": items.s(action)})
    return layout.AUDIT_EVENT.item(audit.event_for(change, actor_id=None, at=at, retention_days=DEFAULT_RETENTION_DAYS))


def test_trail__pages_across_month_buckets__never_before_the_organisation(
    tenant: Tenant, client: DynamoDBClient, table_name: str, call_log: CallLog
) -> None:
    """Events of this month, none next month, two the month after (seen as "now")."""
    tenant.department("This month")
    this_month = trail(tenant.table)
    now = datetime.now(UTC).replace(day=1, hour=12) + timedelta(days=62)
    later = [_event_item(tenant.org_id, now - timedelta(minutes=m), f"later.{m}") for m in (1, 2)]
    write_items(client, table_name, later)
    before = len(call_log.snapshot())

    first = run(audit.list_audit_events(tenant.table, PageRequest(first=3), now=now))
    second = run(audit.list_audit_events(tenant.table, PageRequest(first=3, after=first.end_cursor), now=now))

    assert [e.action for e in first.items] == ["later.1", "later.2", "department.create"]
    assert first.has_next
    assert [e.action for e in second.items] == ["organization.create"]
    assert not second.has_next
    assert [e.action for e in [*first.items, *second.items]][2:] == [e.action for e in this_month]
    queried = [c.partition_keys()[0] for c in call_log.snapshot()[before:]]
    buckets = [keys.audit_bucket(now), keys.previous_audit_bucket(keys.audit_bucket(now))]
    buckets.append(keys.previous_audit_bucket(buckets[1]))
    assert queried == [
        layout.AUDIT_EVENT.partition(tenant.org_id, buckets[0]),
        layout.AUDIT_EVENT.partition(tenant.org_id, buckets[1]),
        layout.AUDIT_EVENT.partition(tenant.org_id, buckets[2]),
        layout.AUDIT_EVENT.partition(tenant.org_id, buckets[2]),
    ], "one Query per bucket, stopping at the organisation's creation month"


def test_trail__page_ending_on_a_bucket_edge__has_next_is_exact(
    tenant: Tenant, client: DynamoDBClient, table_name: str
) -> None:
    now = datetime.now(UTC).replace(day=1, hour=12) + timedelta(days=40)
    write_items(client, table_name, [_event_item(tenant.org_id, now, "later")])

    page = run(audit.list_audit_events(tenant.table, PageRequest(first=1), now=now))
    rest = run(audit.list_audit_events(tenant.table, PageRequest(first=1, after=page.end_cursor), now=now))

    assert [e.action for e in page.items] == ["later"] and page.has_next
    assert [e.action for e in rest.items] == ["organization.create"] and not rest.has_next


def test_trail__another_tenants_cursor__refused(make_tenant: TenantFactory) -> None:
    ours, theirs = make_tenant("Ours"), make_tenant("Theirs")
    their_cursor = run(audit.list_audit_events(theirs.table, PageRequest(first=1))).cursors[0]
    other_list = {keys.PK: keys.org_pk(ours.org_id), keys.SK: "DEPT#" + ids.new_id()}

    for cursor in (their_cursor, other_list):
        with pytest.raises(InvalidInput, match="after"):
            run(audit.list_audit_events(ours.table, PageRequest(first=1, after=cursor)))


# --- oldest first, from an event on: what a live subscription missed ---------------------------


def test_events_after__oldest_first_from_an_event__strongly_consistent_paged_across_months(
    tenant: Tenant, client: DynamoDBClient, table_name: str, call_log: CallLog
) -> None:
    """This month's events after the organisation's creation, none next month, two the month after."""
    for name in ("One", "Two", "Three"):
        tenant.department(name)
    [created, *this_month] = reversed(trail(tenant.table))
    now = datetime.now(UTC).replace(day=1, hour=12) + timedelta(days=62)
    later = [_event_item(tenant.org_id, now - timedelta(minutes=m), f"later.{m}") for m in (2, 1)]
    write_items(client, table_name, later)
    before = len(call_log.snapshot())

    first, go_on = run(audit.events_after(tenant.table, created.event_id, limit=2, now=now))
    second, go_on_2 = run(audit.events_after(tenant.table, go_on or "", limit=2, now=now))
    third, done = run(audit.events_after(tenant.table, go_on_2 or "", limit=2, now=now))

    assert [e.event_id for e in first] == [e.event_id for e in this_month[:2]] and go_on == first[-1].event_id
    assert [e.action for e in [*second, *third]] == ["department.create", "later.2", "later.1"]
    assert done is None
    queries = [c for c in call_log.snapshot()[before:] if c.operation == "Query"]
    assert queries and all(c.params["ConsistentRead"] and c.params["ScanIndexForward"] for c in queries)


def test_events_after__a_time_bound__every_event_of_a_later_millisecond_and_none_before(tenant: Tenant) -> None:
    tenant.department("Bound")
    events = list(reversed(trail(tenant.table)))
    last = events[-1]
    at = ids.id_milliseconds(last.event_id)

    before_last, _ = run(audit.events_after(tenant.table, ids.id_ceiling(at - 1), limit=10))
    after_last, more = run(audit.events_after(tenant.table, ids.id_ceiling(at), limit=10))

    assert last in before_last and (after_last, more) == ([], None)
