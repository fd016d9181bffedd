"""Every event authorised when it is delivered, by the rules of queries.

A subscriber gets what they could read by query at that moment: another organisation's
events never reach them (and are not even decoded for them), another department's
applications are FORBIDDEN, employees see the job board's OPEN postings, and a role change,
a termination or a suspension ends the connection with FORBIDDEN (4403).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from mypy_boto3_dynamodb import DynamoDBClient
from starlette.applications import Starlette
from websockets.exceptions import ConnectionClosed

from datastore.feed.records import ChangeEvent
from datastore.kinds.entities import ApplicationStatus, Department, Employee, JobPosting, Role
from datastore.signin import api_keys
from datastore.tenants import applications, departments, employees, jobs
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import subscribed
from tests.graphql_api.subscriptions.ws import Socket, bearer, open_socket

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

AUDIT = "subscription Audit { auditEventAdded { cursor action event { entityType entityId } } }"
BOARD = "subscription Board { jobPostingChanged { action jobPostingId jobPosting { title status } } }"
APPLICATIONS = """subscription Reviews($job: ID!) {
  applicationChanged(jobPostingId: $job) { action application { status employee { email } } }
}"""
MINE = "subscription Mine { myApplicationChanged { action application { id status } } }"


@dataclass
class Org:
    """An organisation with two departments, each with its manager, and an employee in the first."""

    tenant: Tenant
    sales: Department
    research: Department
    sales_manager: Employee
    research_manager: Employee
    employee: Employee

    def job(self, department: Department, title: str = "Engineer", *, open_: bool = True) -> JobPosting:
        job = run(jobs.create_job(self.tenant.table, department_id=department.dept_id, title=title))
        return run(jobs.publish_job(self.tenant.table, job.job_id)) if open_ else job


@pytest.fixture
def org(make_tenant: TenantFactory) -> Org:
    tenant = make_tenant("Live Org")
    sales_manager = tenant.employee(role=Role.MANAGER)
    research_manager = tenant.employee(role=Role.MANAGER)
    sales = run(departments.create_department(tenant.table, name="Sales", manager_id=sales_manager.emp_id))
    research = run(departments.create_department(tenant.table, name="Research", manager_id=research_manager.emp_id))
    return Org(tenant, sales, research, sales_manager, research_manager, tenant.employee(sales))


@pytest.fixture
def sockets() -> Iterator[list[Socket]]:
    opened: list[Socket] = []
    yield opened
    for socket in opened:
        socket.close()


def refusal(message: dict[str, object]) -> list[str]:
    """The codes of an ``error`` message: a subscription refused, or ended before its first event."""
    assert message["type"] == "error", message
    errors = message["payload"]
    assert isinstance(errors, list)
    return [error["extensions"]["code"] for error in errors]


def connect(live_url: str, api: Api, who: Employee, sockets: list[Socket]) -> Socket:
    socket = open_socket(live_url)
    assert socket.init(bearer(api.token(who))) == {"type": "connection_ack"}
    sockets.append(socket)
    return socket


def test_another_organisation_s_writes__never_delivered_nor_decoded_here(
    live_url: str, live_app: Starlette, api: Api, make_tenant: TenantFactory, sockets: list[Socket]
) -> None:
    ours, theirs = make_tenant("Ours"), make_tenant("Theirs")
    socket = connect(live_url, api, ours.admin, sockets)
    socket.subscribe("audit", AUDIT)
    subscribed(live_app, ours.org_id)
    hub = live_app.state.live
    dropped = hub.frames_dropped

    theirs.department("Theirs only")
    theirs.employee()
    ours.department("Ours")  # after theirs: once ours arrives, theirs had their chance

    message = socket.next_of("audit")
    assert message["payload"]["data"]["auditEventAdded"]["action"] == "department.create"
    assert socket.pending == []  # nothing else came, of theirs or anyone's
    assert hub.frames_dropped > dropped  # their records were dropped as bytes, by the frame header
    assert theirs.org_id not in hub.connections


def test_applications_of_another_department_s_job__forbidden_for_its_non_manager(
    live_url: str, live_app: Starlette, api: Api, org: Org, sockets: list[Socket]
) -> None:
    research_job = org.job(org.research)
    socket = connect(live_url, api, org.sales_manager, sockets)
    socket.subscribe("r", APPLICATIONS, {"job": ids.encode("JobPosting", research_job.job_id)})

    assert refusal(socket.next_of("r")) == ["FORBIDDEN"]
    employee_socket = connect(live_url, api, org.employee, sockets)
    employee_socket.subscribe("r", APPLICATIONS, {"job": ids.encode("JobPosting", research_job.job_id)})
    assert refusal(employee_socket.next_of("r")) == ["FORBIDDEN"]
    # A job of another organisation is no job at all here.
    employee_socket.subscribe("x", APPLICATIONS, {"job": ids.encode("JobPosting", org.tenant.admin.emp_id)})
    assert refusal(employee_socket.next_of("x")) == ["NOT_FOUND"]


def test_manager__own_department_s_applications_delivered__not_other_jobs_or_departments(
    live_url: str, live_app: Starlette, api: Api, org: Org, sockets: list[Socket]
) -> None:
    sales_job, other_sales_job, research_job = org.job(org.sales), org.job(org.sales, "Other"), org.job(org.research)
    socket = connect(live_url, api, org.sales_manager, sockets)
    socket.subscribe("s", APPLICATIONS, {"job": ids.encode("JobPosting", sales_job.job_id)})
    subscribed(live_app, org.tenant.org_id)

    applicant = org.tenant.employee(org.research)
    run(applications.apply_to_job(org.tenant.table, research_job.job_id, applicant.emp_id))
    run(applications.apply_to_job(org.tenant.table, other_sales_job.job_id, applicant.emp_id))
    mine = run(applications.apply_to_job(org.tenant.table, sales_job.job_id, applicant.emp_id))
    run(
        applications.set_application_status(
            org.tenant.table, sales_job.job_id, mine.app_id, ApplicationStatus.REVIEWING
        )
    )

    first, second = socket.next_of("s"), socket.next_of("s")
    assert [m["payload"]["data"]["applicationChanged"]["action"] for m in (first, second)] == [
        "application.apply",
        "application.setStatus",
    ]
    assert second["payload"]["data"]["applicationChanged"]["application"] == {
        "status": "REVIEWING",
        "employee": {"email": applicant.email},
    }


def test_manager_no_longer_managing__the_next_event_ends_the_subscription_forbidden(
    live_url: str, live_app: Starlette, api: Api, org: Org, sockets: list[Socket]
) -> None:
    job = org.job(org.sales)
    socket = connect(live_url, api, org.sales_manager, sockets)
    socket.subscribe("s", APPLICATIONS, {"job": ids.encode("JobPosting", job.job_id)})
    subscribed(live_app, org.tenant.org_id)
    run(departments.update_department(org.tenant.table, org.sales.dept_id, manager_id=org.research_manager.emp_id))

    run(applications.apply_to_job(org.tenant.table, job.job_id, org.employee.emp_id))

    assert refusal(socket.next_of("s")) == ["FORBIDDEN"]  # the subscription is over


def test_employee_job_board__open_postings_and_one_leaving__never_a_draft_or_a_closed_one(
    live_url: str, live_app: Starlette, api: Api, org: Org, sockets: list[Socket]
) -> None:
    employee = connect(live_url, api, org.employee, sockets)
    manager = connect(live_url, api, org.sales_manager, sockets)
    employee.subscribe("b", BOARD)
    manager.subscribe("b", BOARD)
    subscribed(live_app, org.tenant.org_id, 2)
    table = org.tenant.table

    def board(socket: Socket, count: int) -> list[tuple[str, object]]:
        found = []
        for _ in range(count):
            change = socket.next_of("b")["payload"]["data"]["jobPostingChanged"]
            found.append((change["action"], change["jobPosting"]))
        return found

    # One write at a time, each delivered to the manager (who sees every posting) before the
    # next: a posting is read as it is at delivery, so each event shows the state it made.
    manager_saw: list[tuple[str, object]] = []

    def step(write: Callable[[], JobPosting]) -> JobPosting:
        done = write()
        manager_saw.extend(board(manager, 1))
        return done

    draft = step(lambda: run(jobs.create_job(table, department_id=org.sales.dept_id, title="Draft")))
    edited = step(
        lambda: run(jobs.update_job(table, draft.job_id, title="Draft, edited", expected_version=draft.version))
    )
    posted = step(lambda: run(jobs.publish_job(table, draft.job_id, expected_version=edited.version)))
    step(lambda: run(jobs.update_job(table, draft.job_id, title="Renamed", expected_version=posted.version)))
    step(lambda: run(jobs.close_job(table, draft.job_id)))
    never_open = step(lambda: run(jobs.create_job(table, department_id=org.sales.dept_id, title="Never open")))
    step(lambda: run(jobs.close_job(table, never_open.job_id)))
    marker = step(lambda: run(jobs.create_job(table, department_id=org.sales.dept_id, title="Marker")))
    step(
        lambda: run(jobs.publish_job(table, marker.job_id))
    )  # the last write: once it arrives, nothing else is on its way

    assert board(employee, 4) == [
        ("job.publish", {"title": "Draft, edited", "status": "OPEN"}),
        ("job.update", {"title": "Renamed", "status": "OPEN"}),
        ("job.close", None),  # left the board: its id, and nothing an employee may not read
        ("job.publish", {"title": "Marker", "status": "OPEN"}),
    ]
    assert employee.pending == []
    assert [action for action, _job in manager_saw] == [
        "job.create",
        "job.update",
        "job.publish",
        "job.update",
        "job.close",
        "job.create",
        "job.close",
        "job.create",
        "job.publish",
    ]


def test_my_applications__own_only(
    live_url: str, live_app: Starlette, api: Api, org: Org, sockets: list[Socket]
) -> None:
    job = org.job(org.sales)
    other = org.tenant.employee(org.sales)
    socket = connect(live_url, api, org.employee, sockets)
    socket.subscribe("m", MINE)
    subscribed(live_app, org.tenant.org_id)
    table = org.tenant.table

    theirs = run(applications.apply_to_job(table, job.job_id, other.emp_id))
    mine = run(applications.apply_to_job(table, job.job_id, org.employee.emp_id))
    # An application is read as it is at delivery: the next write waits for this one's event.
    first = socket.next_of("m")
    run(applications.set_application_status(table, job.job_id, theirs.app_id, ApplicationStatus.REVIEWING))
    run(applications.withdraw_application(table, job.job_id, mine.app_id))

    mine_id = ids.encode("Application", job.job_id, mine.app_id)
    second = socket.next_of("m")
    assert [m["payload"]["data"]["myApplicationChanged"] for m in (first, second)] == [
        {"action": "application.apply", "application": {"id": mine_id, "status": "APPLIED"}},
        {"action": "application.withdraw", "application": {"id": mine_id, "status": "WITHDRAWN"}},
    ]


def test_role_changed__connection_closed_forbidden(
    live_url: str, live_app: Starlette, api: Api, org: Org, sockets: list[Socket]
) -> None:
    socket = connect(live_url, api, org.employee, sockets)
    socket.subscribe("b", BOARD)
    subscribed(live_app, org.tenant.org_id)

    run(
        employees.update_employee(
            org.tenant.table, org.employee.emp_id, expected_version=org.employee.version, role=Role.MANAGER
        )
    )

    code, reason = socket.closed_with()
    assert code == 4403 and "role changed" in reason


def test_terminated__connection_closed_forbidden(
    live_url: str, live_app: Starlette, api: Api, org: Org, sockets: list[Socket]
) -> None:
    socket = connect(live_url, api, org.employee, sockets)
    socket.subscribe("b", BOARD)
    subscribed(live_app, org.tenant.org_id)

    run(employees.terminate_employee(org.tenant.table, org.employee.emp_id))

    code, reason = socket.closed_with()
    assert code == 4403 and "not active" in reason


def test_organisation_suspended__every_connection_closed_forbidden(
    live_url: str, live_app: Starlette, api: Api, org: Org, sockets: list[Socket], client: DynamoDBClient
) -> None:
    first = connect(live_url, api, org.employee, sockets)
    second = connect(live_url, api, org.tenant.admin, sockets)
    first.subscribe("b", BOARD)
    subscribed(live_app, org.tenant.org_id)
    table = org.tenant.table

    client.update_item(
        TableName=table.name,
        Key={"PK": {"S": f"ORG#{org.tenant.org_id}"}, "SK": {"S": "#METADATA"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "suspended"}},
    )

    for socket in (first, second):  # the one without a subscription too
        code, reason = socket.closed_with()
        assert code == 4403 and "organisation is not active" in reason


def test_api_key_revoked__its_revocation_s_event_not_delivered__closed_forbidden_at_delivery(
    live_url: str, live_app: Starlette, org: Org, sockets: list[Socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hub never sees the key's own stream record here (as when the revocation's audit event
    # comes first, as on DynamoDB Local's stream, or the key's record is late): only the
    # delivery's own check can refuse the key.
    hub = live_app.state.live
    revoke = hub._revoke

    def without_keys(org_id: str, change: ChangeEvent) -> None:
        if change.kind != "ApiKey":
            revoke(org_id, change)

    monkeypatch.setattr(hub, "_revoke", without_keys)
    key, secret = run(api_keys.create_api_key(org.tenant.table, name="Dashboard", role=Role.ADMIN))
    socket = open_socket(live_url)
    sockets.append(socket)
    assert socket.init(bearer(secret)) == {"type": "connection_ack"}
    socket.subscribe("audit", AUDIT)
    subscribed(live_app, org.tenant.org_id)

    run(api_keys.revoke_api_key(org.tenant.table, key.key_id))

    received: list[dict[str, Any]] = []
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            received.append(socket.receive())
    assert received == []  # no `next`: not even the revocation's own event
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4403, "the API key was revoked")
