"""Entities to DynamoDB items and back: keys, entity tags and attributes put together.

Each entity's attributes are declared once in ``datastore.layout``, which compiles the
readers and writers used here; this module adds the keys, index attributes and the
``entity`` tag, and holds the items that are not entities (pointers, audit events,
idempotency records). Items are built in DynamoDB's wire format directly; going through boto3's TypeSerializer
(and its Decimals) costs several milliseconds per hundred items (PERFORMANCE.md) and buys
nothing for the handful of attribute types used here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from datastore import keys, layout, names
from datastore.entities import (
    ApiKey,
    Application,
    ApplicationCounts,
    AuditEvent,
    AuditValue,
    Department,
    Employee,
    FieldChange,
    Identity,
    JobPosting,
    JobStatus,
    Organization,
    Subscription,
)
from datastore.ids import DepartmentId, EmployeeId, OrgId
from datastore.layout import Item, parse_timestamp, timestamp

__all__ = ["Item", "parse_timestamp", "timestamp"]

ENTITY: Final = "entity"

ORGANIZATION: Final = "Organization"
SUBSCRIPTION: Final = "Subscription"
DEPARTMENT: Final = "Department"
EMPLOYEE: Final = "Employee"
MEMBERSHIP: Final = "Membership"
NAME_ENTRY: Final = "NameEntry"
EMAIL_POINTER: Final = "EmailPointer"
IDENTITY: Final = "Identity"
DOMAIN: Final = "EmailDomain"
JOB_POSTING: Final = "JobPosting"
APPLICATION: Final = "Application"
APPLICANT: Final = "Applicant"
AUDIT_EVENT: Final = "AuditEvent"
IDEMPOTENCY: Final = "Idempotency"
API_KEY: Final = "ApiKey"
API_KEY_LOOKUP: Final = "ApiKeyLookup"

# The idempotency record's expiry, in epoch seconds: the table's TTL attribute.
EXPIRES_AT: Final = "expiresAt"


# --- attribute values ---------------------------------------------------------------------


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def now() -> datetime:
    # Millisecond precision, as stored, so a value read back compares equal to the one written.
    current = datetime.now(UTC)
    return current.replace(microsecond=current.microsecond // 1000 * 1000)


def _ts(value: datetime) -> dict[str, str]:
    return s(timestamp(value))


def _get_s(item: Item, name: str) -> str:
    return str(item[name]["S"])


def _opt_s(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["S"])


def _get_n(item: Item, name: str) -> int:
    return int(item[name]["N"])


def _key(key: keys.Key) -> Item:
    return {keys.PK: s(key.pk), keys.SK: s(key.sk)}


def _put_optional(item: Item, name: str, value: dict[str, str] | None) -> Item:
    if value is not None:
        item[name] = value
    return item


# --- organisation -------------------------------------------------------------------------

# Readers: straight from a wire item to its entity (see ``datastore.layout``).
organization_from: Final = layout.ORGANIZATION.read
subscription_from: Final = layout.SUBSCRIPTION.read
department_from: Final = layout.DEPARTMENT.read
employee_from: Final = layout.EMPLOYEE.read
"""Reads an Employee from its own item, its department membership copy or a name entry."""
job_from: Final = layout.JOB_POSTING.read
application_from: Final = layout.APPLICATION.read


def organization_item(org: Organization) -> Item:
    return {
        **_key(keys.organization_key(org.org_id)),
        keys.GSI1PK: s(keys.ORGS_PK),
        keys.GSI1SK: s(keys.orgs_gsi_sk(org.name, org.org_id)),
        ENTITY: s(ORGANIZATION),
        **layout.ORGANIZATION.write(org),
    }


def domain_item(domain: str, org_id: OrgId) -> Item:
    """Marks ``domain`` as owned by ``org_id``: employees' emails there belong to it alone."""
    return {
        **_key(keys.domain_key(domain)),
        ENTITY: s(DOMAIN),
        layout.DOMAIN: s(domain),
        layout.ORG_ID: s(org_id),
    }


def subscription_item(sub: Subscription) -> Item:
    return {**_key(keys.subscription_key(sub.org_id)), ENTITY: s(SUBSCRIPTION), **layout.SUBSCRIPTION.write(sub)}


# --- department ---------------------------------------------------------------------------


def department_item(dept: Department) -> Item:
    return {
        **_key(keys.department_key(dept.org_id, dept.dept_id)),
        ENTITY: s(DEPARTMENT),
        **layout.DEPARTMENT.write(dept),
    }


# --- employee -----------------------------------------------------------------------------


def employee_item(emp: Employee) -> Item:
    return {
        **_key(keys.employee_key(emp.org_id, emp.emp_id)),
        keys.GSI1PK: s(keys.employees_gsi_pk(emp.org_id)),
        keys.GSI1SK: s(keys.employees_gsi_sk(timestamp(emp.hired_at), emp.emp_id)),
        ENTITY: s(EMPLOYEE),
        **layout.EMPLOYEE.write(emp),
    }


def membership_item(emp: Employee) -> Item:
    """An active employee's copy in its department's partition.

    It carries every employee attribute so that listing a department (AP7) is one Query
    charged by total size, not a BatchGetItem charged 4 KB per employee.
    """
    if emp.department_id is None:
        raise ValueError("an employee without a department has no membership")
    return {
        **_key(keys.membership_key(emp.org_id, emp.department_id, emp.emp_id)),
        ENTITY: s(MEMBERSHIP),
        **layout.MEMBERSHIP.write(emp),
    }


def name_entry_keys(emp: Employee) -> list[keys.Key]:
    """The keys of an employee's name entries: one per prefix of its folded names, "" first."""
    last, first = names.sort_form(emp.last_name), names.sort_form(emp.first_name)
    return [
        keys.name_entry_key(emp.org_id, prefix, last, first, emp.emp_id)
        for prefix in names.prefixes(emp.first_name, emp.last_name)
    ]


def name_entry_items(emp: Employee) -> list[Item]:
    """An employee's copies in the name partitions (``datastore.names``), active or not.

    Each carries every employee attribute, as the membership copy does, so a search page is
    one Query with nothing to hydrate.
    """
    attributes = layout.NAME_ENTRY.write(emp)
    return [{**_key(key), ENTITY: s(NAME_ENTRY), **attributes} for key in name_entry_keys(emp)]


def email_pointer_item(emp: Employee) -> Item:
    return {
        **_key(keys.email_pointer_key(emp.org_id, emp.email)),
        ENTITY: s(EMAIL_POINTER),
        layout.ORG_ID: s(emp.org_id),
        layout.EMP_ID: s(emp.emp_id),
    }


def identity_item(emp: Employee) -> Item:
    return {
        **_key(keys.identity_key(emp.email)),
        ENTITY: s(IDENTITY),
        layout.EMAIL: s(emp.email),
        layout.ORG_ID: s(emp.org_id),
        layout.EMP_ID: s(emp.emp_id),
    }


def identity_from(item: Item) -> Identity:
    return Identity(
        email=_get_s(item, layout.EMAIL),
        org_id=OrgId(_get_s(item, layout.ORG_ID)),
        emp_id=EmployeeId(_get_s(item, layout.EMP_ID)),
    )


def emp_id_of_pointer(item: Item) -> EmployeeId:
    return EmployeeId(_get_s(item, layout.EMP_ID))


# --- API key -------------------------------------------------------------------------------

api_key_from: Final = layout.API_KEY.read
api_key_grant_from: Final = layout.API_KEY_GRANT.read


def api_key_item(key: ApiKey) -> Item:
    return {**_key(keys.api_key_key(key.org_id, key.key_id)), ENTITY: s(API_KEY), **layout.API_KEY.write(key)}


def api_key_lookup_item(key: ApiKey) -> Item:
    """The key's lookup item, found by the hash of the secret a caller presents."""
    return {
        **_key(keys.api_key_lookup_key(key.secret_hash)),
        ENTITY: s(API_KEY_LOOKUP),
        layout.ORG_ID: s(key.org_id),
        layout.KEY_ID: s(key.key_id),
        layout.ROLE: s(key.role.value),
        layout.STATUS: s(key.status.value),
    }


# --- job posting ---------------------------------------------------------------------------


def job_item(job: JobPosting) -> Item:
    item: Item = {
        **_key(keys.job_key(job.org_id, job.job_id)),
        ENTITY: s(JOB_POSTING),
        **layout.JOB_POSTING.write(job),
    }
    if job.status is JobStatus.OPEN:
        item.update(open_job_index_attributes(job))
    return item


def application_counts_attributes(counts: ApplicationCounts) -> Item:
    """The counters as stored; for seeding only (live writes change them with ``ADD``)."""
    return {name: n(counts.of(status)) for status, name in layout.APPLICATION_COUNTS.items()}


def job_result_item(job: JobPosting) -> Item:
    """A job write's idempotency result: the job with the counters it was read with."""
    return {**job_item(job), **application_counts_attributes(job.application_counts)}


def open_job_index_attributes(job: JobPosting) -> Item:
    """The sparse index entry: present only while the job is open."""
    if job.posted_at is None:
        raise ValueError("an open job has a postedAt")
    return {
        keys.GSI1PK: s(keys.open_jobs_gsi_pk(job.org_id)),
        keys.GSI1SK: s(keys.open_jobs_gsi_sk(timestamp(job.posted_at), job.job_id)),
    }


# --- application ---------------------------------------------------------------------------


def application_item(app: Application) -> Item:
    return {
        **_key(keys.application_key(app.org_id, app.job_id, app.app_id)),
        keys.GSI1PK: s(keys.employee_applications_gsi_pk(app.org_id, app.emp_id)),
        keys.GSI1SK: s(keys.employee_applications_gsi_sk(app.app_id)),
        ENTITY: s(APPLICATION),
        **layout.APPLICATION.write(app),
    }


def applicant_item(app: Application) -> Item:
    """Marks that an employee applied to a job: the one-application-per-pair guard."""
    return {
        **_key(keys.applicant_key(app.org_id, app.job_id, app.emp_id)),
        ENTITY: s(APPLICANT),
        "appId": s(app.app_id),
    }


# --- audit event ---------------------------------------------------------------------------


def audit_value(value: dict[str, Any] | None) -> AuditValue:
    """An attribute value as the audit trail records it."""
    if value is None or "NULL" in value:
        return None
    if "N" in value:
        return int(value["N"])
    if "S" in value:
        return str(value["S"])
    raise ValueError(f"no audit form for the attribute value {value!r}")


def _audit_attribute(value: AuditValue) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    return n(value) if isinstance(value, int) else s(value)


def audit_event_item(event: AuditEvent) -> Item:
    item: Item = {
        **_key(keys.audit_event_key(event.org_id, keys.audit_bucket(event.occurred_at), event.event_id)),
        ENTITY: s(AUDIT_EVENT),
        "orgId": s(event.org_id),
        "eventId": s(event.event_id),
        "occurredAt": _ts(event.occurred_at),
        "action": s(event.action),
        "entityType": s(event.entity_type),
        "entityId": s(event.entity_id),
        "changes": {
            "L": [
                {
                    "M": {
                        "field": s(change.field),
                        "before": _audit_attribute(change.before),
                        "after": _audit_attribute(change.after),
                    }
                }
                for change in event.changes
            ]
        },
    }
    _put_optional(item, "actorId", None if event.actor_id is None else s(event.actor_id))
    _put_optional(item, "beforeVersion", None if event.before_version is None else n(event.before_version))
    return _put_optional(item, "afterVersion", None if event.after_version is None else n(event.after_version))


def audit_event_from(item: Item) -> AuditEvent:
    def change_from(entry: dict[str, Any]) -> FieldChange:
        fields = entry["M"]
        return FieldChange(_get_s(fields, "field"), audit_value(fields["before"]), audit_value(fields["after"]))

    before_version = item.get("beforeVersion")
    after_version = item.get("afterVersion")
    return AuditEvent(
        org_id=OrgId(_get_s(item, "orgId")),
        event_id=_get_s(item, "eventId"),
        occurred_at=parse_timestamp(_get_s(item, "occurredAt")),
        actor_id=_opt_s(item, "actorId"),
        action=_get_s(item, "action"),
        entity_type=_get_s(item, "entityType"),
        entity_id=_get_s(item, "entityId"),
        changes=tuple(change_from(entry) for entry in item["changes"]["L"]),
        before_version=None if before_version is None else int(before_version["N"]),
        after_version=None if after_version is None else int(after_version["N"]),
    )


# --- idempotency record ----------------------------------------------------------------------


def idempotency_record_item(
    *,
    org_id: OrgId,
    key: str,
    operation: str,
    fingerprint: str,
    result: Item,
    created_at: datetime,
    expires_at: datetime,
) -> Item:
    """A write's first result under its idempotency key, kept until ``expiresAt`` (TTL)."""
    return {
        **_key(keys.idempotency_key(org_id, key)),
        ENTITY: s(IDEMPOTENCY),
        "orgId": s(org_id),
        "operation": s(operation),
        "fingerprint": s(fingerprint),
        "result": {"M": result},
        "createdAt": _ts(created_at),
        EXPIRES_AT: n(int(expires_at.timestamp())),
    }


# A move's replay needs the department the employee left, which its employee item no
# longer holds: the move's result is the employee item with this attribute added.
MOVED_FROM: Final = "movedFromDepartmentId"


def move_result_item(emp: Employee, from_department_id: DepartmentId | None) -> Item:
    """What a move's idempotency record keeps: the employee after it and where they were."""
    return _put_optional(employee_item(emp), MOVED_FROM, None if from_department_id is None else s(from_department_id))


def moved_from_of(result: Item) -> DepartmentId | None:
    moved_from = _opt_s(result, MOVED_FROM)
    return None if moved_from is None else DepartmentId(moved_from)


def idempotency_fingerprint_of(record: Item) -> str:
    return _get_s(record, "fingerprint")


def idempotency_result_of(record: Item) -> Item:
    result: Item = record["result"]["M"]
    return result


def idempotency_expires_at(record: Item) -> int:
    return _get_n(record, EXPIRES_AT)


def partition_key_of(item: Item) -> str:
    return _get_s(item, keys.PK)
