"""A tenant holding at least one item of every kind an organisation can own, written by the
datastore's own writes: what the lifecycle tests walk, export, restore and delete.

``KINDS_WRITTEN`` names the kinds it holds. tests/datastore/lifecycle/test_kinds.py fails when a
kind declared in datastore/kinds/layout.py belongs to organisations (exported, or deleted or
released by offboarding) but no write here makes one: a new kind needs a line here, so every
lifecycle test covers it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from datastore.kinds import layout
from datastore.kinds.bookkeeping import GatewayConnection, GatewaySubscription, ResumePoint
from datastore.kinds.entities import ApiKey, Application, Department, Employee, JobPosting, Role
from datastore.signin import api_keys, identity_providers, resume_points, sessions
from datastore.table.scoped import Table
from datastore.tenants import applications, departments, employees, jobs, live_connections, persisted_documents
from datastore.values import items
from datastore.webhooks import endpoints as webhook_endpoints
from datastore.webhooks import outbox
from tests.blocking import run
from tests.conftest import Tenant

KINDS_WRITTEN: Final = frozenset(
    {
        layout.ORGANIZATION.tag,
        layout.SUBSCRIPTION.tag,
        layout.EMAIL_DOMAIN.tag,
        layout.DEPARTMENT.tag,
        layout.EMPLOYEE.tag,
        layout.MEMBERSHIP.tag,
        layout.NAME_ENTRY.tag,
        layout.EMAIL_POINTER.tag,
        layout.IDENTITY.tag,
        layout.JOB_POSTING.tag,
        layout.APPLICATION.tag,
        layout.APPLICANT.tag,
        layout.API_KEY.tag,
        layout.API_KEY_LOOKUP.tag,
        layout.IDENTITY_PROVIDER.tag,
        layout.ISSUER_CLIENT.tag,
        layout.SESSION.tag,
        layout.SIGNED_OUT.tag,
        layout.RESUME_POINT.tag,
        layout.REFRESH_LOOKUP.tag,
        layout.AUDIT_EVENT.tag,
        layout.IDEMPOTENCY.tag,
        layout.PERSISTED_DOCUMENT.tag,
        layout.GATEWAY_CONNECTION.tag,
        layout.WEBHOOK_ENDPOINT.tag,
        layout.WEBHOOK_DELIVERY.tag,
        layout.WEBHOOK_CURSOR.tag,
        layout.GATEWAY_SUBSCRIPTION.tag,
        layout.GATEWAY_LOOKUP.tag,
    }
)
DOCUMENT: Final = "query Me { me { id } }"
LIFETIMES: Final = sessions.Lifetimes(timedelta(hours=1), timedelta(days=1))


@dataclass(frozen=True)
class Complete:
    tenant: Tenant
    department: Department
    employee: Employee
    # Terminated, with applications and a keyed write: what an erasure works on.
    leaver: Employee
    job: JobPosting
    application: Application
    api_key: ApiKey
    secret: str
    # The employee's session's refresh token, and the provider's issuer.
    refresh_token: str
    issuer: str


def complete(tenant: Tenant) -> Complete:
    """Every kind an organisation owns, in ``tenant``, through the datastore's writes."""
    table = tenant.table
    department = tenant.department("Operations")
    employee = run(
        employees.create_employee(
            table,
            email=tenant.email("erin"),
            first_name="Erin",
            last_name="Ng",
            department_id=department.dept_id,
            role=Role.MANAGER,
            idempotency_key="create-erin",
        )
    )
    leaver = run(
        employees.create_employee(
            table,
            email=tenant.email("lou.leaver"),
            first_name="Lou",
            last_name="Leaverton",
            department_id=department.dept_id,
            role=Role.EMPLOYEE,
        )
    )
    job = run(jobs.create_job(table, department_id=department.dept_id, title="Welder", description="Hot work."))
    job = run(jobs.publish_job(table, job.job_id))
    application = run(applications.apply_to_job(table, job.job_id, leaver.emp_id, idempotency_key="apply-1"))
    leaver = run(employees.terminate_employee(table, leaver.emp_id, idempotency_key="leave-1"))
    api_key, secret = run(api_keys.create_api_key(table, name="HRIS sync", role=Role.ADMIN))
    digest = hashlib.sha256(DOCUMENT.encode()).hexdigest()
    run(persisted_documents.put_document(table, tenant.organization.org_id, digest, DOCUMENT, items.now()))
    # Each organisation its own issuer: two complete tenants in one table must not collide.
    issuer = f"https://sso.example/{tenant.organization.org_id.lower()}"
    run(
        identity_providers.set_identity_provider(
            table,
            tenant.organization.org_id,
            issuer_url=issuer,
            client_id_list=("web", "mobile"),
            authorization_endpoint=f"{issuer}/authorize",
            token_endpoint=f"{issuer}/token",
        )
    )
    session, refresh_token = run(sessions.start_session(table, employee.emp_id, LIFETIMES))
    # Where the session's subscription got to when its connection ended.
    now = items.now()
    run(
        resume_points.save(
            table,
            ResumePoint(
                tenant.organization.org_id,
                employee.emp_id,
                session.session_id,
                resume_points.subscription_hash("Subscription.employeeChanged"),
                "cursor",
                now,
                now + timedelta(minutes=5),
            ),
        )
    )
    run(sessions.sign_out_everywhere(table, leaver.emp_id))
    _live_connection(table, employee)
    _webhooks(table)
    return Complete(tenant, department, employee, leaver, job, application, api_key, secret, refresh_token, issuer)


def _webhooks(table: Table) -> None:
    """An endpoint subscribed to department events, with a delivery and the dispatcher's cursor."""
    hook = run(webhook_endpoints.create_endpoint(table, url_text="https://hooks.example/hr", types=["department.*"]))
    listed = run(webhook_endpoints.list_endpoints(table, consistent=True))
    run(departments.create_department(table, name="Hooked"))
    start = outbox.start_after(listed, None, back=timedelta(0))
    assert start is not None
    enqueued = run(outbox.enqueue(table, listed, start))
    assert enqueued.written and enqueued.last_event_id is not None and hook.secret is not None
    run(outbox.save_cursor(table, enqueued.last_event_id))


def _live_connection(table: Table, employee: Employee) -> None:
    """The employee connected over API Gateway's WebSocket API, with one subscription."""
    at = items.now()
    ends = at + timedelta(hours=2)
    connection_id = f"conn{employee.emp_id[-10:]}="
    org_id = employee.org_id
    run(
        live_connections.open_connection(
            table,
            GatewayConnection(
                org_id=org_id,
                connection_id=connection_id,
                subject=employee.emp_id,
                role=employee.role.value,
                api_key=False,
                session_id=None,
                endpoint="https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/live",
                connected_at=at,
                token_expires_at=None,
                expires_at=ends,
                acknowledged=True,
            ),
        )
    )
    subscription = "subscription Directory { employeeChanged { action } }"
    run(
        live_connections.subscribe(
            table,
            GatewaySubscription(org_id, connection_id, "1", "employeeChanged", subscription, "{}", None, at, ends),
        )
    )
