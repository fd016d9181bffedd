"""Every kind of item the table holds, written from fixed values: the wire-format fixture's cases.

``written()`` writes one or more items of each kind (and the keys the queries use) through the
datastore's own writers, the kinds' declarations (``datastore/kinds/layout.py``). ``layout_1.json``
holds what the release at commit eea1f7e wrote for the same values, captured through its
hand-written writers (``datastore/items.py`` then, ``datastore/values/items.py`` now) before
the kinds were declared; tests/datastore/kinds/test_layout.py holds today's writers to it,
byte for byte, so no stored item changes shape and no migration is needed.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from unittest import mock

from datastore.kinds import layout
from datastore.kinds.entities import (
    ApiKey,
    ApiKeyGrant,
    ApiKeyStatus,
    Application,
    ApplicationCounts,
    ApplicationStatus,
    AuditEvent,
    Department,
    EmailDomain,
    Employee,
    EmployeeStatus,
    FieldChange,
    Identity,
    JobPosting,
    JobStatus,
    Move,
    Organization,
    OrganizationStatus,
    Plan,
    Role,
    Subscription,
)
from datastore.tenancy import keys
from datastore.tenancy.scope import TenantScope
from datastore.tenants import applications, departments, employees, jobs, persisted_documents
from datastore.upkeep import layout_version, migration
from datastore.values import items
from datastore.writes import idempotency
from tests.blocking import run

FIXTURE: Final = Path(__file__).with_name("layout_1.json")

ORG: Final = "01HZ0000000000000000000001"
DEPT: Final = "01HZ0000000000000000000002"
DEPT_2: Final = "01HZ0000000000000000000003"
EMP: Final = "01HZ0000000000000000000004"
EMP_2: Final = "01HZ0000000000000000000005"
JOB: Final = "01HZ0000000000000000000006"
APP: Final = "01HZ0000000000000000000007"
KEY: Final = "01HZ0000000000000000000008"
EVENT: Final = "01HZ0000000000000000000009"
SHA256: Final = "ab" * 32
WHEN: Final = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)

DOMAINS: Final = ("acme.example", "b.example")
ORGANIZATION: Final = Organization(ORG, "Acme", Plan.PRO, OrganizationStatus.ACTIVE, WHEN, DOMAINS)
ORGANIZATION_WITHOUT_DOMAINS: Final = Organization(ORG, "Acme", Plan.FREE, OrganizationStatus.SUSPENDED, WHEN)
SUBSCRIPTION: Final = Subscription(ORG, Plan.PRO, 250, "cus_1", WHEN + timedelta(days=30))
SUBSCRIPTION_BARE: Final = Subscription(ORG, Plan.FREE, 10, None, None)
DEPARTMENT: Final = Department(ORG, DEPT, "Ops", EMP, 3)
DEPARTMENT_BARE: Final = Department(ORG, DEPT_2, "Sales", None, 0)
EMPLOYEE: Final = Employee(
    ORG, EMP, "erin@acme.example", "Érin", "Ng Li", DEPT, Role.MANAGER, EmployeeStatus.ACTIVE, WHEN, None, 3
)
EMPLOYEE_GONE: Final = Employee(
    ORG, EMP_2, "max@acme.example", "Max", "Mo", None, Role.EMPLOYEE, EmployeeStatus.INACTIVE, WHEN, WHEN, 7
)
JOB_DRAFT: Final = JobPosting(ORG, JOB, DEPT, "Welder", "Hot work.\nSafely.", JobStatus.DRAFT, None, None, 1)
JOB_OPEN: Final = JobPosting(
    ORG,
    JOB,
    DEPT,
    "Welder",
    "",
    JobStatus.OPEN,
    WHEN,
    None,
    2,
    ApplicationCounts(applied=2, reviewing=1, withdrawn=4),
)
JOB_CLOSED: Final = JobPosting(ORG, JOB, DEPT, "Welder", "", JobStatus.CLOSED, WHEN, WHEN + timedelta(days=1), 3)
APPLICATION: Final = Application(ORG, APP, JOB, EMP, ApplicationStatus.REVIEWING, WHEN)
API_KEY: Final = ApiKey(ORG, KEY, "HRIS sync", Role.ADMIN, ApiKeyStatus.ACTIVE, WHEN, SHA256)
API_KEY_REVOKED: Final = ApiKey(
    ORG, KEY, "HRIS sync", Role.EMPLOYEE, ApiKeyStatus.REVOKED, WHEN, SHA256, WHEN, WHEN + timedelta(hours=1)
)
AUDIT_EVENT: Final = AuditEvent(
    ORG,
    EVENT,
    WHEN,
    EMP,
    "employee.update",
    "Employee",
    EMP,
    (FieldChange("firstName", "Erin", "Érin"), FieldChange("departmentId", None, DEPT), FieldChange("version", 2, 3)),
    2,
    3,
)
AUDIT_EVENT_BARE: Final = AuditEvent(ORG, EVENT, WHEN, None, "department.create", "Department", DEPT, (), None, None)
DOMAIN: Final = EmailDomain("acme.example", ORG)
IDENTITY: Final = Identity(EMPLOYEE.email, ORG, EMP)
GRANT: Final = ApiKeyGrant(ORG, KEY, Role.ADMIN, ApiKeyStatus.ACTIVE)
GRANT_REVOKED: Final = ApiKeyGrant(ORG, KEY, Role.EMPLOYEE, ApiKeyStatus.REVOKED)
PROGRESS: Final = migration.Progress(
    ORG,
    "Acme",
    frozenset({"email domains", "name entries"}),
    employees_indexed=12,
    counters_repaired=1,
    domains_assigned=("acme.example",),
    domains_held_elsewhere=("b.example", "a.example"),
)
PROGRESS_BARE: Final = migration.Progress(ORG, "Acme", without_domains=True)


@dataclass
class Capture:
    """A stand-in Table for writers that build their items inline: keeps what they would send."""

    tenant: TenantScope = field(default_factory=lambda: TenantScope(ORG, EMP))
    name: str = "hr"
    sent: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scope(self) -> TenantScope:
        return self.tenant

    def with_scope(self, _scope: object) -> Capture:
        return self

    async def write(self, ops: Any, *, token: str | None = None) -> None:
        self.sent.extend(op.params for op in ops)


def key_pair(key: keys.Key) -> list[str]:
    return [key.pk, key.sk]


class _Prepared(Exception):
    pass


def fingerprints() -> dict[str, str]:
    """The fingerprint each keyed write stores in its idempotency record, for fixed inputs.

    Records outlive a release (24 hours): a retry sent across an upgrade must hash alike.
    """
    found: dict[str, str] = {}

    def prepare(table: Any, org_id: str, operation: str, key: str | None, inputs: Any) -> None:
        found[operation] = idempotency.fingerprint(operation, EMP, inputs)
        raise _Prepared

    table: Any = Capture()
    writes = [
        lambda: run(
            employees.create_employee(
                table, email="a@acme.example", first_name="A", last_name="B", department_id=DEPT, role=Role.ADMIN
            )
        ),
        lambda: run(employees.update_employee(table, EMP, expected_version=3, first_name="C", role=Role.MANAGER)),
        lambda: run(employees.move_employee(table, EMP, DEPT_2, expected_version=3)),
        lambda: run(employees.terminate_employee(table, EMP)),
        lambda: run(departments.create_department(table, name="Ops", manager_id=EMP)),
        lambda: run(departments.update_department(table, DEPT, manager_id=departments.NO_MANAGER)),
        lambda: run(jobs.create_job(table, department_id=DEPT, title="T", description="D")),
        lambda: run(jobs.update_job(table, JOB, expected_version=2, title="U", department_id=DEPT_2)),
        lambda: run(jobs.publish_job(table, JOB, expected_version=1)),
        lambda: run(jobs.close_job(table, JOB)),
        lambda: run(applications.apply_to_job(table, JOB, EMP)),
        lambda: run(applications.withdraw_application(table, JOB, APP)),
        lambda: run(applications.set_application_status(table, JOB, APP, ApplicationStatus.ACCEPTED)),
    ]
    with mock.patch.object(idempotency, "prepare", prepare):
        for write in writes:
            with contextlib.suppress(_Prepared):
                write()
    return found


def written() -> dict[str, Any]:
    """Each kind's items (and the query keys) as the datastore writes them today."""
    with mock.patch.object(items, "now", lambda: WHEN):
        return _written()


def _written() -> dict[str, Any]:
    capture = Capture()
    run(persisted_documents.put_document(capture, ORG, SHA256, "{ me { id } }", WHEN))  # type: ignore[arg-type]
    document = capture.sent.pop()["Item"]
    run(layout_version.stamp(capture, 1, over=None))  # type: ignore[arg-type]
    stamp = capture.sent.pop()["Item"]
    run(migration.write_progress(capture, 1, PROGRESS))  # type: ignore[arg-type]
    run(migration.write_progress(capture, 1, PROGRESS_BARE))  # type: ignore[arg-type]
    progress_bare, progress = capture.sent.pop()["Item"], capture.sent.pop()["Item"]
    record = idempotency.record_op(
        idempotency.IdempotencyRequest(ORG, "retry-1", "employee.move", "f" * 64),
        layout.MOVE_RESULT.item(Move(EMPLOYEE, DEPT_2)),
        WHEN,
    )
    return {
        "organization": layout.ORGANIZATION.item(ORGANIZATION),
        "organization_without_domains": layout.ORGANIZATION.item(ORGANIZATION_WITHOUT_DOMAINS),
        "subscription": layout.SUBSCRIPTION.item(SUBSCRIPTION),
        "subscription_bare": layout.SUBSCRIPTION.item(SUBSCRIPTION_BARE),
        "domain": layout.EMAIL_DOMAIN.item(DOMAIN),
        "department": layout.DEPARTMENT.item(DEPARTMENT),
        "department_bare": layout.DEPARTMENT.item(DEPARTMENT_BARE),
        "employee": layout.EMPLOYEE.item(EMPLOYEE),
        "employee_gone": layout.EMPLOYEE.item(EMPLOYEE_GONE),
        "membership": layout.MEMBERSHIP.item(EMPLOYEE),
        "name_entries": employees.name_entry_items(EMPLOYEE),
        "email_pointer": layout.EMAIL_POINTER.item(IDENTITY),
        "identity": layout.IDENTITY.item(IDENTITY),
        "job_draft": layout.JOB_POSTING.item(JOB_DRAFT),
        "job_open": layout.JOB_POSTING.item(JOB_OPEN),
        "job_closed": layout.JOB_POSTING.item(JOB_CLOSED),
        "job_result": layout.JOB_POSTING.item_with_counters(JOB_OPEN),
        "application": layout.APPLICATION.item(APPLICATION),
        "applicant": layout.APPLICANT.item(APPLICATION),
        "api_key": layout.API_KEY.item(API_KEY),
        "api_key_revoked": layout.API_KEY.item(API_KEY_REVOKED),
        "api_key_lookup": layout.API_KEY_LOOKUP.item(GRANT, secret_hash=SHA256),
        "api_key_lookup_revoked": layout.API_KEY_LOOKUP.item(GRANT_REVOKED, secret_hash=SHA256),
        "audit_event": layout.AUDIT_EVENT.item(AUDIT_EVENT),
        "audit_event_bare": layout.AUDIT_EVENT.item(AUDIT_EVENT_BARE),
        "move_result": layout.MOVE_RESULT.item(Move(EMPLOYEE, DEPT_2)),
        "move_result_unmoved": layout.MOVE_RESULT.item(Move(EMPLOYEE, None)),
        "idempotency_record": record.params["Item"],
        "persisted_document": document,
        "layout_version": stamp,
        "migration_progress": progress,
        "migration_progress_bare": progress_bare,
        "fingerprints": fingerprints(),
        "query_keys": {
            "organization": key_pair(layout.ORGANIZATION.key_at(ORG)),
            "subscription": key_pair(layout.SUBSCRIPTION.key_at(ORG)),
            "department": key_pair(layout.DEPARTMENT.key_at(ORG, DEPT)),
            "employee": key_pair(layout.EMPLOYEE.key_at(ORG, EMP)),
            "email_pointer": key_pair(layout.EMAIL_POINTER.key_at(ORG, EMPLOYEE.email)),
            "membership": key_pair(layout.MEMBERSHIP.key_at(ORG, DEPT, EMP)),
            "identity": key_pair(layout.IDENTITY.key_at(EMPLOYEE.email)),
            "domain": key_pair(layout.EMAIL_DOMAIN.key_at("acme.example")),
            "job": key_pair(layout.JOB_POSTING.key_at(ORG, JOB)),
            "application": key_pair(layout.APPLICATION.key_at(ORG, JOB, APP)),
            "applicant": key_pair(layout.APPLICANT.key_at(ORG, JOB, EMP)),
            "api_key": key_pair(layout.API_KEY.key_at(ORG, KEY)),
            "api_key_lookup": key_pair(layout.API_KEY_LOOKUP.key_at(SHA256)),
            "idempotency": key_pair(layout.IDEMPOTENCY.key_at(ORG, "retry-1")),
            "persisted_document": key_pair(layout.PERSISTED_DOCUMENT.key_at(ORG, SHA256)),
            "layout_version": key_pair(layout.LAYOUT_VERSION_ITEM.key_at()),
            "migration_progress": key_pair(layout.MIGRATION_PROGRESS.key_at(1, ORG)),
            "organization_partition": layout.ORGANIZATION.partition(ORG),
            "membership_partition": layout.MEMBERSHIP.partition(ORG, DEPT),
            "job_partition": layout.APPLICATION.partition(ORG, JOB),
            "audit_partition": layout.AUDIT_EVENT.partition(ORG, "2024-05"),
            "name_partition": layout.NAME_ENTRY.partition(ORG, "ng"),
            "directory_partition": layout.NAME_ENTRY.partition(ORG, ""),
            "employees_index": layout.EMPLOYEE.index_partition(ORG),
            "open_jobs_index": layout.JOB_POSTING.index_partition(ORG),
            "employee_applications_index": layout.APPLICATION.index_partition(ORG, EMP),
            "organizations_index": layout.ORGANIZATION.index_partition(),
            "departments_prefix": layout.DEPARTMENT.sort_prefix,
            "employees_prefix": layout.MEMBERSHIP.sort_prefix,
            "jobs_prefix": layout.JOB_POSTING.sort_prefix,
            "applications_prefix": layout.APPLICATION.sort_prefix,
            "api_keys_prefix": layout.API_KEY.sort_prefix,
            "audit_events_prefix": layout.AUDIT_EVENT.sort_prefix,
            "organization_header_prefix": keys.ORG_HEADER_PREFIX,
        },
    }


def fixture() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(FIXTURE.read_text())["items"]
    return found
