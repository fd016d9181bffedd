"""The entities (organisations, departments, employees, job postings, applications) as typed, immutable values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from datastore.values.ids import ApiKeyId, ApplicationId, DepartmentId, EmployeeId, JobId, OrgId, SessionId
from datastore.values.items import AuditValue


class Plan(StrEnum):
    FREE = "free"
    PRO = "pro"
    ENTERPRISE = "enterprise"


class OrganizationStatus(StrEnum):
    ACTIVE = "active"
    SUSPENDED = "suspended"
    # Locked while ``server.py restore`` replaces its data (datastore/lifecycle/restore.py).
    RESTORING = "restoring"
    # Closed by the platform: its data is deleted once the grace period is over
    # (datastore/lifecycle/offboarding.py).
    CLOSING = "closing"


class Role(StrEnum):
    ADMIN = "admin"
    MANAGER = "manager"
    EMPLOYEE = "employee"


class EmployeeStatus(StrEnum):
    ACTIVE = "active"
    INACTIVE = "inactive"


class JobStatus(StrEnum):
    DRAFT = "draft"
    OPEN = "open"
    CLOSED = "closed"


class ApplicationStatus(StrEnum):
    APPLIED = "applied"
    REVIEWING = "reviewing"
    REJECTED = "rejected"
    ACCEPTED = "accepted"
    WITHDRAWN = "withdrawn"


# Who may move an application where. Withdrawing is the applicant's own act (withdraw);
# the others are the reviewer's (set_application_status). Final states have no entry.
APPLICATION_TRANSITIONS: dict[ApplicationStatus, frozenset[ApplicationStatus]] = {
    ApplicationStatus.APPLIED: frozenset(
        {ApplicationStatus.REVIEWING, ApplicationStatus.REJECTED, ApplicationStatus.WITHDRAWN}
    ),
    ApplicationStatus.REVIEWING: frozenset(
        {ApplicationStatus.ACCEPTED, ApplicationStatus.REJECTED, ApplicationStatus.WITHDRAWN}
    ),
}


@dataclass(frozen=True, slots=True)
class Organization:
    org_id: OrgId
    name: str
    plan: Plan
    status: OrganizationStatus
    created_at: datetime
    # The email domains it owns, platform-wide (sorted); its employees' emails are in them.
    email_domains: tuple[str, ...] = ()
    # While RESTORING: when the restore locked it, and the status it had then (the restore
    # returns to it if it gives up before replacing anything).
    locked_at: datetime | None = None
    status_before_lock: OrganizationStatus | None = None
    # How long its audit events are kept, in days; None: the platform's default
    # (datastore/table/retention.py).
    audit_retention_days: int | None = None


@dataclass(frozen=True, slots=True)
class EmailDomain:
    """An email domain and the one organisation, platform-wide, whose employees' emails it holds."""

    domain: str
    org_id: OrgId


@dataclass(frozen=True, slots=True)
class Subscription:
    org_id: OrgId
    plan: Plan
    seats: int
    billing_customer_id: str | None
    renews_at: datetime | None


@dataclass(frozen=True, slots=True)
class Department:
    org_id: OrgId
    dept_id: DepartmentId
    name: str
    manager_id: EmployeeId | None
    headcount: int


@dataclass(frozen=True, slots=True)
class Employee:
    org_id: OrgId
    emp_id: EmployeeId
    email: str
    first_name: str
    last_name: str
    department_id: DepartmentId | None
    role: Role
    status: EmployeeStatus
    hired_at: datetime
    terminated_at: datetime | None
    version: int
    # When erasePerson removed their personal data (datastore/lifecycle/erasure.py): the item
    # is then a tombstone, its email and names empty.
    erased_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Move:
    """A move's outcome: the employee after it and the department they left.

    ``from_department_id`` comes from the same read the write was conditioned on, and a
    replay returns it from the idempotency record, so a retry names the same department.
    It is None when the employee had no department or was already in the target.
    """

    employee: Employee
    from_department_id: DepartmentId | None


@dataclass(frozen=True, slots=True)
class ApplicationCounts:
    """How many of a job's applications are in each status (SPEC: the job's pipeline)."""

    applied: int = 0
    reviewing: int = 0
    rejected: int = 0
    accepted: int = 0
    withdrawn: int = 0

    @property
    def total(self) -> int:
        return self.applied + self.reviewing + self.rejected + self.accepted + self.withdrawn

    def of(self, status: ApplicationStatus) -> int:
        return int(getattr(self, status.value))


NO_APPLICATIONS = ApplicationCounts()


@dataclass(frozen=True, slots=True)
class JobPosting:
    org_id: OrgId
    job_id: JobId
    department_id: DepartmentId
    title: str
    description: str
    status: JobStatus
    posted_at: datetime | None
    closed_at: datetime | None
    version: int
    # Kept by the application writes (datastore/tenants/applications.py), never by the job's own.
    application_counts: ApplicationCounts = NO_APPLICATIONS


@dataclass(frozen=True, slots=True)
class Application:
    org_id: OrgId
    app_id: ApplicationId
    job_id: JobId
    emp_id: EmployeeId
    status: ApplicationStatus
    submitted_at: datetime


class ApiKeyStatus(StrEnum):
    ACTIVE = "active"
    REVOKED = "revoked"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An organisation's record of one of its API keys: everything but the secret.

    ``secret_hash`` (SHA-256 of the secret) names the key's lookup item, so revoking can
    reach it; it is never shown to anyone, nor exported. A key restored from an export has
    none (None): it has no lookup item either, so it can never authenticate.
    """

    org_id: OrgId
    key_id: ApiKeyId
    name: str
    role: Role
    status: ApiKeyStatus
    created_at: datetime
    secret_hash: str | None
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ApiKeyGrant:
    """What a key's lookup item grants its bearer: a role in one organisation, while ACTIVE."""

    org_id: OrgId
    key_id: ApiKeyId
    role: Role
    status: ApiKeyStatus


@dataclass(frozen=True, slots=True)
class Identity:
    """Sign-in's view of an email: which employee of which organisation owns it."""

    email: str
    org_id: OrgId
    emp_id: EmployeeId


@dataclass(frozen=True, slots=True)
class IdentityProvider:
    """An organisation's own OpenID provider: who signs its people in (datastore/signin/identity_providers.py).

    ``client_ids`` are the organisation's client ids at the provider (an ID token's ``aud``
    names one); the first is the one a browser app is sent to sign in with. The endpoints
    are the provider's discovery document's, as read when it was registered or changed.
    """

    org_id: OrgId
    issuer: str
    client_ids: tuple[str, ...]
    authorization_endpoint: str
    token_endpoint: str
    created_at: datetime
    updated_at: datetime
    version: int
    # Sessions begun through it before this time are over (datastore/signin/sessions.py checks it at
    # each refresh): set when the API key that last changed it is revoked.
    sessions_ended_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class IssuerClient:
    """Sign-in's view of one client id at one issuer: the organisation whose provider it is."""

    issuer: str
    client_id: str
    org_id: OrgId


class SessionStatus(StrEnum):
    ACTIVE = "active"
    ENDED = "ended"


@dataclass(frozen=True, slots=True)
class Session:
    """A person's signed-in session: one family of rotating refresh tokens (datastore/signin/sessions.py).

    ``generation`` counts the refresh tokens the family has issued; only the latest one's
    lookup item names the current generation, so an older one presented again is a reuse.
    ``expires_at`` is the earlier of ``absolute_expires_at`` and the idle deadline (the last
    refresh plus the idle lifetime); it is also the item's TTL.
    """

    org_id: OrgId
    emp_id: EmployeeId
    session_id: SessionId
    status: SessionStatus
    generation: int
    created_at: datetime
    refreshed_at: datetime
    absolute_expires_at: datetime
    expires_at: datetime
    ended_at: datetime | None = None
    # Why it ended: "signOut", "reuse" (a used refresh token came back).
    end_reason: str | None = None


@dataclass(frozen=True, slots=True)
class SignedOut:
    """When a person last signed out everywhere: every session of theirs begun before then is over."""

    org_id: OrgId
    emp_id: EmployeeId
    at: datetime


@dataclass(frozen=True, slots=True)
class RefreshGrant:
    """What a refresh token's lookup item says: whose session, and which of its tokens it is."""

    org_id: OrgId
    emp_id: EmployeeId
    session_id: SessionId
    generation: int
    expires_at: datetime
    # The organisation's own identity provider the session was begun through: its issuer and
    # when it was registered (which tells one registration from a later one of the same
    # issuer). None for the platform's provider, and on lookup items written before it was
    # recorded. Each token of the session carries it on.
    provider_issuer: str | None = None
    provider_since: datetime | None = None


@dataclass(frozen=True, slots=True)
class FieldChange:
    field: str
    before: AuditValue
    after: AuditValue


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One successful write: who did what to which entity, when, and what it changed."""

    org_id: OrgId
    event_id: str
    occurred_at: datetime
    # The employee who wrote it; None for a write without a known caller (demo data,
    # an operator acting without an id).
    actor_id: str | None
    action: str
    entity_type: str
    entity_id: str
    changes: tuple[FieldChange, ...]
    before_version: int | None
    after_version: int | None
    # The idempotency key the write ran under, if any: how the write's record
    # (``ORG#<org>#IDEM#<key>``) is reached by export, erasure and offboarding.
    idempotency_key: str | None = None
    # When erasePerson removed a person's values from ``changes`` (each then None).
    erased_at: datetime | None = None
    # When the table's TTL deletes it: when it happened plus its organisation's retention.
    # None only for events written before expiries (until ``server.py migrate`` stamps them).
    expires_at: datetime | None = None
