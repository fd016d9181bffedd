"""Every kind of item the table holds, written from fixed values: the wire-format fixture's cases.

``written()`` writes one or more items of each kind (and the keys the queries use) through the
datastore's own writers. ``layout_1.json`` holds what the release at commit eea1f7e wrote for
the same values, captured before the item kinds were declared in ``datastore/layout.py``;
tests/datastore/test_layout.py holds today's writers to it, byte for byte, so no stored
item changes shape and no migration is needed.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from unittest import mock

from datastore import (
    applications,
    departments,
    documents,
    employees,
    idempotency,
    items,
    jobs,
    keys,
    layout_version,
    migration,
)
from datastore.entities import (
    ApiKey,
    ApiKeyStatus,
    Application,
    ApplicationCounts,
    ApplicationStatus,
    AuditEvent,
    Department,
    Employee,
    EmployeeStatus,
    FieldChange,
    JobPosting,
    JobStatus,
    Organization,
    OrganizationStatus,
    Plan,
    Role,
    Subscription,
)
from datastore.scope import TenantScope

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

    def write(self, ops: Any, *, token: str | None = None) -> None:
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
        lambda: employees.create_employee(
            table, email="a@acme.example", first_name="A", last_name="B", department_id=DEPT, role=Role.ADMIN
        ),
        lambda: employees.update_employee(table, EMP, expected_version=3, first_name="C", role=Role.MANAGER),
        lambda: employees.move_employee(table, EMP, DEPT_2, expected_version=3),
        lambda: employees.terminate_employee(table, EMP),
        lambda: departments.create_department(table, name="Ops", manager_id=EMP),
        lambda: departments.update_department(table, DEPT, manager_id=departments.NO_MANAGER),
        lambda: jobs.create_job(table, department_id=DEPT, title="T", description="D"),
        lambda: jobs.update_job(table, JOB, expected_version=2, title="U", department_id=DEPT_2),
        lambda: jobs.publish_job(table, JOB, expected_version=1),
        lambda: jobs.close_job(table, JOB),
        lambda: applications.apply_to_job(table, JOB, EMP),
        lambda: applications.withdraw_application(table, JOB, APP),
        lambda: applications.set_application_status(table, JOB, APP, ApplicationStatus.ACCEPTED),
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
    documents.put_document(capture, ORG, SHA256, "{ me { id } }", WHEN)  # type: ignore[arg-type]
    document = capture.sent.pop()["Item"]
    layout_version.stamp(capture, 1, over=None)  # type: ignore[arg-type]
    stamp = capture.sent.pop()["Item"]
    migration.write_progress(capture, 1, PROGRESS)  # type: ignore[arg-type]
    migration.write_progress(capture, 1, PROGRESS_BARE)  # type: ignore[arg-type]
    progress_bare, progress = capture.sent.pop()["Item"], capture.sent.pop()["Item"]
    record = idempotency.record_op(
        idempotency.IdempotencyRequest(ORG, "retry-1", "employee.move", "f" * 64),
        items.move_result_item(EMPLOYEE, DEPT_2),
        WHEN,
    )
    return {
        "organization": items.organization_item(ORGANIZATION),
        "organization_without_domains": items.organization_item(ORGANIZATION_WITHOUT_DOMAINS),
        "subscription": items.subscription_item(SUBSCRIPTION),
        "subscription_bare": items.subscription_item(SUBSCRIPTION_BARE),
        "domain": items.domain_item("acme.example", ORG),
        "department": items.department_item(DEPARTMENT),
        "department_bare": items.department_item(DEPARTMENT_BARE),
        "employee": items.employee_item(EMPLOYEE),
        "employee_gone": items.employee_item(EMPLOYEE_GONE),
        "membership": items.membership_item(EMPLOYEE),
        "name_entries": items.name_entry_items(EMPLOYEE),
        "email_pointer": items.email_pointer_item(EMPLOYEE),
        "identity": items.identity_item(EMPLOYEE),
        "job_draft": items.job_item(JOB_DRAFT),
        "job_open": items.job_item(JOB_OPEN),
        "job_closed": items.job_item(JOB_CLOSED),
        "job_result": items.job_result_item(JOB_OPEN),
        "application": items.application_item(APPLICATION),
        "applicant": items.applicant_item(APPLICATION),
        "api_key": items.api_key_item(API_KEY),
        "api_key_revoked": items.api_key_item(API_KEY_REVOKED),
        "api_key_lookup": items.api_key_lookup_item(API_KEY),
        "api_key_lookup_revoked": items.api_key_lookup_item(API_KEY_REVOKED),
        "audit_event": items.audit_event_item(AUDIT_EVENT),
        "audit_event_bare": items.audit_event_item(AUDIT_EVENT_BARE),
        "move_result": items.move_result_item(EMPLOYEE, DEPT_2),
        "move_result_unmoved": items.move_result_item(EMPLOYEE, None),
        "idempotency_record": record.params["Item"],
        "persisted_document": document,
        "layout_version": stamp,
        "migration_progress": progress,
        "migration_progress_bare": progress_bare,
        "fingerprints": fingerprints(),
        "query_keys": {
            "organization": key_pair(keys.organization_key(ORG)),
            "subscription": key_pair(keys.subscription_key(ORG)),
            "department": key_pair(keys.department_key(ORG, DEPT)),
            "employee": key_pair(keys.employee_key(ORG, EMP)),
            "email_pointer": key_pair(keys.email_pointer_key(ORG, EMPLOYEE.email)),
            "membership": key_pair(keys.membership_key(ORG, DEPT, EMP)),
            "identity": key_pair(keys.identity_key(EMPLOYEE.email)),
            "domain": key_pair(keys.domain_key("acme.example")),
            "job": key_pair(keys.job_key(ORG, JOB)),
            "application": key_pair(keys.application_key(ORG, JOB, APP)),
            "applicant": key_pair(keys.applicant_key(ORG, JOB, EMP)),
            "api_key": key_pair(keys.api_key_key(ORG, KEY)),
            "api_key_lookup": key_pair(keys.api_key_lookup_key(SHA256)),
            "idempotency": key_pair(keys.idempotency_key(ORG, "retry-1")),
            "persisted_document": key_pair(keys.persisted_document_key(ORG, SHA256)),
            "layout_version": key_pair(keys.layout_version_key()),
            "migration_progress": key_pair(keys.migration_progress_key(1, ORG)),
            "organization_partition": keys.org_pk(ORG),
            "membership_partition": keys.membership_pk(ORG, DEPT),
            "job_partition": keys.job_partition_pk(ORG, JOB),
            "audit_partition": keys.audit_pk(ORG, "2024-05"),
            "name_partition": keys.name_pk(ORG, "ng"),
            "directory_partition": keys.name_pk(ORG, ""),
            "employees_index": keys.employees_gsi_pk(ORG),
            "open_jobs_index": keys.open_jobs_gsi_pk(ORG),
            "employee_applications_index": keys.employee_applications_gsi_pk(ORG, EMP),
            "organizations_index": keys.ORGS_PK,
            "departments_prefix": keys.department_sk_prefix(),
            "employees_prefix": keys.employee_sk_prefix(),
            "jobs_prefix": keys.job_sk_prefix(),
            "applications_prefix": keys.application_sk_prefix(),
            "api_keys_prefix": keys.api_key_sk_prefix(),
            "audit_events_prefix": keys.audit_event_sk_prefix(),
            "organization_header_prefix": keys.ORG_HEADER_PREFIX,
        },
    }


def fixture() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(FIXTURE.read_text())["items"]
    return found
