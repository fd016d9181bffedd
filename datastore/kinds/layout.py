"""The table's layout: every kind of item it holds, each declared once.

A declaration (``datastore.kinds.model.Layout``) gives a kind's key templates, its GSI1 keys, its
entity tag, its attributes and its version attribute; its writer, its reader and its
lookups by id are compiled from that and nothing else spells them. Attribute names that
code outside the declarations needs (in update and condition expressions) are the
constants below, spelt here once.

    kind              PK                         SK
                      (GSI1PK / GSI1SK)
    Organization      ORG#<org>                  #METADATA
                      (ORGS / <name>#<org>)
    Subscription      ORG#<org>                  #SUBSCRIPTION
    EmailDomain       DOMAIN#<domain>            #DOMAIN
    Department        ORG#<org>                  DEPT#<dept>
    Employee          ORG#<org>                  EMP#<emp>
                      (ORG#<org>#EMP / <hiredAt>#<emp>)
    Membership        ORG#<org>#DEPT#<dept>      EMP#<emp>
    NameEntry         ORG#<org>#NAME#<prefix>    <last>\x01<first>\x01<emp>   (names folded, names.py)
    EmailPointer      ORG#<org>                  EMAIL#<email>
    Identity          EMAIL#<email>              #IDENTITY
    JobPosting        ORG#<org>                  JOB#<job>
                      (open only: ORG#<org>#OPEN / JOB#<postedAt>#<job>)
    Application       ORG#<org>#JOB#<job>        APP#<app>
                      (ORG#<org>#EMP#<emp> / APP#<app>)
    Applicant         ORG#<org>#JOB#<job>        APPLICANT#<emp>
    ApiKey            ORG#<org>                  APIKEY#<key>
    ApiKeyLookup      APIKEY#<sha256>            #APIKEY
    IdentityProvider  ORG#<org>                  IDP
    IssuerClient      ISSUER#<issuer>            CLIENT#<clientId>
    Session           ORG#<org>#SESSION#<emp>    SESSION#<session>
    SignedOut         ORG#<org>#SESSION#<emp>    #SIGNED_OUT
    ResumePoint       ORG#<org>#SESSION#<emp>    RESUME#<session>#<sha256>   (of a subscription)
    RefreshLookup     REFRESH#<sha256>           #REFRESH
    AuditEvent        ORG#<org>#AUDIT#<yyyy-mm>  EVT#<event>
    Idempotency       ORG#<org>#IDEM#<key>       #IDEMPOTENCY
    PersistedDocument ORG#<org>#PQ#<slot>        #DOCUMENT     (slot: the SHA-256's first 3 hex digits)
    LayoutVersion     LAYOUT                     #VERSION
    MigrationProgress LAYOUT                     MIGRATION#<version>#<org>
    FeedLease         FEED#<group>               #LEASE
    FeedCheckpoint    FEED#<group>               SHARD#<shard>
    GatewayConnection ORG#<org>#LIVE             CONN#<connectionId>
    GatewaySubscription ORG#<org>#LIVE           SUB#<connectionId>#<operationId>
    GatewayLookup     WSCONN#<connectionId>      #WSCONN
    RestoreRecord     LIFECYCLE#<org>            RESTORE#<lockedAt>
    DeletionReceipt   LIFECYCLE#<org>            #DELETION
    FormerDeletion    LIFECYCLE#<org>            DELETION#<closedAt>
    ErasureRecord     ORG#<org>#ERASED           EMP#<emp>
    LifecycleEvent    ORG#<org>#LIFECYCLE        EVT#<event>
    WebhookEndpoint   ORG#<org>                  WEBHOOK#<endpoint>
                      (WEBHOOKS / <org>#<endpoint>)
    WebhookDelivery   ORG#<org>                  WHDLV#<endpoint>#<event>
                      (pending only: ORG#<org>#WHDUE#<endpoint> / <event>)
    WebhookCursor     ORG#<org>                  #WEBHOOK_CURSOR

Why the keys are shaped so (tenant partitions, the name entries' sort order, audit buckets,
document slots) is told in datastore/tenancy/keys.py, which holds the key vocabulary the scopes and
IAM policies check against. The layout is byte for byte the one earlier releases wrote
(tests/datastore/kinds/test_layout.py holds each kind to a fixture captured before these
declarations): no stored item changed shape with them.
"""

from __future__ import annotations

from typing import Any, Final

from datastore.kinds.bookkeeping import (
    DeletionReceipt,
    ErasureRecord,
    FeedCheckpoint,
    FeedLease,
    GatewayConnection,
    GatewayLookup,
    GatewaySubscription,
    IdempotencyRecord,
    LayoutStamp,
    MigrationProgress,
    PersistedDocument,
    RestoreRecord,
    ResumePoint,
)
from datastore.kinds.entities import (
    NO_APPLICATIONS,
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
    IdentityProvider,
    IssuerClient,
    JobPosting,
    JobStatus,
    Move,
    Organization,
    OrganizationStatus,
    Plan,
    RefreshGrant,
    Role,
    Session,
    SessionStatus,
    SignedOut,
    Subscription,
)
from datastore.kinds.model import (
    ENTITY,
    Attribute,
    Layout,
    boolean,
    counted,
    custom,
    enum,
    epoch,
    item_map,
    n,
    s,
    strings,
    ts,
    words,
)
from datastore.kinds.webhook_entities import DeliveryStatus, WebhookCursor, WebhookDelivery, WebhookEndpoint
from datastore.tenancy import keys
from datastore.values.items import Item, audit_attribute, audit_value

__all__ = ["ENTITY", "Item"]

# --- attribute names used outside the declarations ---------------------------------------------

ORG_ID: Final = "orgId"
EMP_ID: Final = "empId"
NAME: Final = "name"
STATUS: Final = "status"
VERSION: Final = "version"
MANAGER_ID: Final = "managerId"
HEADCOUNT: Final = "headcount"
EMAIL: Final = "email"
DEPARTMENT_ID: Final = "departmentId"
EMAIL_DOMAINS: Final = "emailDomains"
KEY_ID: Final = "keyId"
ROLE: Final = "role"
LAST_USED_AT: Final = "lastUsedAt"
REVOKED_AT: Final = "revokedAt"
SECRET_HASH: Final = "secretHash"
CREATED_AT: Final = "createdAt"
PLAN: Final = "plan"
JOB_ID: Final = "jobId"
ISSUER: Final = "issuer"
GENERATION: Final = "generation"
SIGNED_OUT_AT: Final = "signedOutAt"
SESSIONS_ENDED_AT: Final = "sessionsEndedAt"
# The table's TTL attribute (epoch seconds): idempotency records, persisted documents, the
# stream readers' items and audit events (datastore/table/retention.py).
EXPIRES_AT: Final = "expiresAt"
LAYOUT_VERSION: Final = "layoutVersion"
LOCKED_AT: Final = "lockedAt"
ERASED_AT: Final = "erasedAt"
AUDIT_RETENTION_DAYS: Final = "auditRetentionDays"

# A job's application counters, one number attribute per status (absent reads as 0). Only
# ``ADD`` changes them, in the application writes' transactions (datastore/tenants/applications.py).
APPLICATION_COUNTS: Final = {status: f"{status.value}Count" for status in ApplicationStatus}
# How the counters are named together (the drift repair's report, datastore/upkeep/counts.py).
APPLICATION_COUNTS_LABEL: Final = "applicationCounts"
# Raised by one with every change of a counted item's counters (a job's application counts,
# a department's headcount), in the same update; the drift repair (datastore/upkeep/counts.py)
# conditions its fix on it, so a repair never lands on counters moved since its recount.
COUNTS_REVISION: Final = "countsRevision"


def read_application_counts(item: Item) -> ApplicationCounts:
    """A job item's counters; a job written before they existed has none and reads as zeros."""
    values = [item.get(name) for name in APPLICATION_COUNTS.values()]
    if not any(values):
        return NO_APPLICATIONS
    return ApplicationCounts(*(0 if value is None else int(value["N"]) for value in values))


def application_counts_attributes(counts: ApplicationCounts) -> Item:
    """The counters as stored; for seeding and results only (live writes change them with ``ADD``)."""
    return {name: {"N": str(counts.of(status))} for status, name in APPLICATION_COUNTS.items()}


# An audit event's changed fields: a list of maps, each a field's name and its values.
_CHANGE_FIELD: Final = "field"
_CHANGE_BEFORE: Final = "before"
_CHANGE_AFTER: Final = "after"


def _changes_wire(changes: tuple[FieldChange, ...]) -> dict[str, Any]:
    return {
        "L": [
            {
                "M": {
                    _CHANGE_FIELD: {"S": change.field},
                    _CHANGE_BEFORE: audit_attribute(change.before),
                    _CHANGE_AFTER: audit_attribute(change.after),
                }
            }
            for change in changes
        ]
    }


def _changes_from(value: dict[str, Any]) -> tuple[FieldChange, ...]:
    return tuple(
        FieldChange(
            entry["M"][_CHANGE_FIELD]["S"],
            audit_value(entry["M"][_CHANGE_BEFORE]),
            audit_value(entry["M"][_CHANGE_AFTER]),
        )
        for entry in value["L"]
    )


# --- organisations ------------------------------------------------------------------------------

ORGANIZATION: Final = Layout(
    Organization,
    tag="Organization",
    key=("ORG#{org_id}", "#METADATA"),
    index=(keys.ORGS_PK, "{name}#{org_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s(NAME, "name"),
        enum(PLAN, "plan", Plan),
        enum(STATUS, "status", OrganizationStatus),
        ts(CREATED_AT, "created_at"),
        words(EMAIL_DOMAINS, "email_domains"),
        ts(LOCKED_AT, "locked_at", optional=True),
        enum("statusBeforeLock", "status_before_lock", OrganizationStatus, optional=True),
        n(AUDIT_RETENTION_DAYS, "audit_retention_days", optional=True),
    ),
)

SUBSCRIPTION: Final = Layout(
    Subscription,
    tag="Subscription",
    key=("ORG#{org_id}", "#SUBSCRIPTION"),
    attributes=(
        s(ORG_ID, "org_id"),
        enum(PLAN, "plan", Plan),
        n("seats", "seats"),
        s("billingCustomerId", "billing_customer_id", optional=True),
        ts("renewsAt", "renews_at", optional=True),
    ),
)

EMAIL_DOMAIN: Final = Layout(
    EmailDomain,
    tag="EmailDomain",
    key=("DOMAIN#{domain}", "#DOMAIN"),
    attributes=(s("domain", "domain"), s(ORG_ID, "org_id")),
)
"""Marks an email domain as one organisation's: employees' emails there belong to it alone."""

# --- departments and employees -----------------------------------------------------------------

DEPARTMENT: Final = Layout(
    Department,
    tag="Department",
    key=("ORG#{org_id}", "DEPT#{dept_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s("deptId", "dept_id"),
        s(NAME, "name"),
        s(MANAGER_ID, "manager_id", optional=True),
        n(HEADCOUNT, "headcount"),
    ),
)

_EMPLOYEE_ATTRIBUTES: Final[tuple[Attribute, ...]] = (
    s(ORG_ID, "org_id"),
    s(EMP_ID, "emp_id"),
    s(EMAIL, "email"),
    s("firstName", "first_name"),
    s("lastName", "last_name"),
    s(DEPARTMENT_ID, "department_id", optional=True),
    enum(ROLE, "role", Role),
    enum(STATUS, "status", EmployeeStatus),
    ts("hiredAt", "hired_at"),
    ts("terminatedAt", "terminated_at", optional=True),
    n(VERSION, "version"),
    ts(ERASED_AT, "erased_at", optional=True),
)

EMPLOYEE: Final = Layout(
    Employee,
    tag="Employee",
    key=("ORG#{org_id}", "EMP#{emp_id}"),
    index=("ORG#{org_id}#EMP", "{hired_at:timestamp}#{emp_id}"),
    attributes=_EMPLOYEE_ATTRIBUTES,
    version=VERSION,
)

MEMBERSHIP: Final = Layout(
    Employee,
    tag="Membership",
    key=("ORG#{org_id}#DEPT#{department_id}", "EMP#{emp_id}"),
    attributes=_EMPLOYEE_ATTRIBUTES,
)
"""An active employee's copy in its department's partition (AP7).

It carries every employee attribute so that listing a department is one Query charged by
total size, not a BatchGetItem charged 4 KB per employee.
"""

NAME_ENTRY: Final = Layout(
    Employee,
    tag="NameEntry",
    key=("ORG#{org_id}#NAME#{prefix}", "{last_name:folded}\x01{first_name:folded}\x01{emp_id}"),
    attributes=_EMPLOYEE_ATTRIBUTES,
)
"""An employee's copy under one ``prefix`` of its folded names (name search, the directory by
name); its sort key orders a partition by folded last name, then first name, then id."""

EMAIL_POINTER: Final = Layout(
    Identity,
    tag="EmailPointer",
    key=("ORG#{org_id}", "EMAIL#{email}"),
    attributes=(s(ORG_ID, "org_id"), s(EMP_ID, "emp_id")),
)
"""Which employee of the organisation has an email (AP4 within a tenant)."""

IDENTITY: Final = Layout(
    Identity,
    tag="Identity",
    key=("EMAIL#{email}", "#IDENTITY"),
    attributes=(s(EMAIL, "email"), s(ORG_ID, "org_id"), s(EMP_ID, "emp_id")),
)
"""Which organisation and employee an email belongs to, platform-wide (sign-in)."""

MOVE_RESULT: Final = Layout(
    Move,
    tag="Move",
    key=None,
    inline=(("employee", EMPLOYEE),),
    attributes=(s("movedFromDepartmentId", "from_department_id", optional=True),),
)
"""What a move's idempotency record keeps: the employee item after it, and the department it
left (which the employee item no longer holds), so a replay names the same one."""

# --- jobs and applications ---------------------------------------------------------------------

JOB_POSTING: Final = Layout(
    JobPosting,
    tag="JobPosting",
    key=("ORG#{org_id}", "JOB#{job_id}"),
    # The sparse index of open jobs: present only while the job is open.
    index=("ORG#{org_id}#OPEN", "JOB#{posted_at:timestamp}#{job_id}"),
    index_when=lambda job: job.status is JobStatus.OPEN,
    attributes=(
        s(ORG_ID, "org_id"),
        s(JOB_ID, "job_id"),
        s(DEPARTMENT_ID, "department_id"),
        s("title", "title"),
        s("description", "description"),
        enum(STATUS, "status", JobStatus),
        ts("postedAt", "posted_at", optional=True),
        ts("closedAt", "closed_at", optional=True),
        n(VERSION, "version"),
        counted(APPLICATION_COUNTS_LABEL, "application_counts", read_application_counts, application_counts_attributes),
    ),
    version=VERSION,
)

APPLICATION: Final = Layout(
    Application,
    tag="Application",
    key=("ORG#{org_id}#JOB#{job_id}", "APP#{app_id}"),
    index=("ORG#{org_id}#EMP#{emp_id}", "APP#{app_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s("appId", "app_id"),
        s(JOB_ID, "job_id"),
        s(EMP_ID, "emp_id"),
        enum(STATUS, "status", ApplicationStatus),
        ts("submittedAt", "submitted_at"),
    ),
)

APPLICANT: Final = Layout(
    Application,
    tag="Applicant",
    key=("ORG#{org_id}#JOB#{job_id}", "APPLICANT#{emp_id}"),
    attributes=(s("appId", "app_id"),),
)
"""Marks that an employee applied to a job: the one-application-per-pair guard (never read)."""

# --- API keys --------------------------------------------------------------------------------------

API_KEY: Final = Layout(
    ApiKey,
    tag="ApiKey",
    key=("ORG#{org_id}", "APIKEY#{key_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s(KEY_ID, "key_id"),
        s(NAME, "name"),
        enum(ROLE, "role", Role),
        enum(STATUS, "status", ApiKeyStatus),
        ts(CREATED_AT, "created_at"),
        s(SECRET_HASH, "secret_hash", optional=True),
        ts(LAST_USED_AT, "last_used_at", optional=True),
        ts(REVOKED_AT, "revoked_at", optional=True),
    ),
)
"""The organisation's record of one of its API keys (no secret; listed by admins)."""

API_KEY_LOOKUP: Final = Layout(
    ApiKeyGrant,
    tag="ApiKeyLookup",
    key=("APIKEY#{secret_hash}", "#APIKEY"),
    attributes=(
        s(ORG_ID, "org_id"),
        s(KEY_ID, "key_id"),
        enum(ROLE, "role", Role),
        enum(STATUS, "status", ApiKeyStatus),
    ),
)
"""A key's lookup item outside the tenant partitions, under the SHA-256 of its secret: what
authenticating a key needs, no more."""

# --- sign-in: identity providers and sessions ----------------------------------------------------

IDENTITY_PROVIDER: Final = Layout(
    IdentityProvider,
    tag="IdentityProvider",
    key=("ORG#{org_id}", "IDP"),
    attributes=(
        s(ORG_ID, "org_id"),
        s(ISSUER, "issuer"),
        words("clientIds", "client_ids"),
        s("authorizationEndpoint", "authorization_endpoint"),
        s("tokenEndpoint", "token_endpoint"),
        ts(CREATED_AT, "created_at"),
        ts("updatedAt", "updated_at"),
        n(VERSION, "version"),
        ts(SESSIONS_ENDED_AT, "sessions_ended_at", optional=True),
    ),
    version=VERSION,
)
"""The organisation's own OpenID provider (at most one), as its admins and operators see it.
Each refresh of a session begun through it checks it (datastore/signin/sessions.py): its issuer and
``createdAt`` as the session recorded them, and ``sessionsEndedAt`` (absent on records
written before it existed: no session ended) older than the session's start."""

ISSUER_CLIENT: Final = Layout(
    IssuerClient,
    tag="IssuerClient",
    key=("ISSUER#{issuer}", "CLIENT#{client_id}"),
    attributes=(s(ISSUER, "issuer"), s("clientId", "client_id"), s(ORG_ID, "org_id")),
)
"""One client id of a registered provider, outside the tenant partitions, keyed by the issuer: an
ID token's ``iss`` and ``azp`` (or its one ``aud``) find the organisation with one GetItem.
Keyed by the client too, since several organisations may share one issuer (Google's), each
with its own client."""

SESSION: Final = Layout(
    Session,
    tag="Session",
    key=("ORG#{org_id}#SESSION#{emp_id}", "SESSION#{session_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s(EMP_ID, "emp_id"),
        s("sessionId", "session_id"),
        enum(STATUS, "status", SessionStatus),
        n(GENERATION, "generation"),
        ts(CREATED_AT, "created_at"),
        ts("refreshedAt", "refreshed_at"),
        epoch("absoluteExpiresAt", "absolute_expires_at"),
        epoch(EXPIRES_AT, "expires_at"),
        ts("endedAt", "ended_at", optional=True),
        s("endReason", "end_reason", optional=True),
    ),
)
"""A person's session (a family of refresh tokens), in a partition of that person's sessions.
No secret: the current refresh token is known only by its lookup item."""

SIGNED_OUT: Final = Layout(
    SignedOut,
    tag="SignedOut",
    key=("ORG#{org_id}#SESSION#{emp_id}", "#SIGNED_OUT"),
    attributes=(s(ORG_ID, "org_id"), s(EMP_ID, "emp_id"), ts(SIGNED_OUT_AT, "at")),
)
"""When the person last signed out everywhere (or was terminated): sessions begun before are over."""

RESUME_POINT: Final = Layout(
    ResumePoint,
    tag="ResumePoint",
    key=("ORG#{org_id}#SESSION#{emp_id}", "RESUME#{session_id}#{subscription}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s(EMP_ID, "emp_id"),
        s("sessionId", "session_id"),
        s("subscription", "subscription"),
        s("cursor", "cursor"),
        ts("savedAt", "saved_at"),
        epoch(EXPIRES_AT, "expires_at"),
    ),
)
"""Where one of a session's live subscriptions got to when its connection ended (datastore/
resume_points.py), beside the session: ids and a signed cursor, kept for the replay window (TTL)."""

REFRESH_LOOKUP: Final = Layout(
    RefreshGrant,
    tag="RefreshLookup",
    key=("REFRESH#{token_hash}", "#REFRESH"),
    attributes=(
        s(ORG_ID, "org_id"),
        s(EMP_ID, "emp_id"),
        s("sessionId", "session_id"),
        n(GENERATION, "generation"),
        epoch(EXPIRES_AT, "expires_at"),
        s("providerIssuer", "provider_issuer", optional=True),
        ts("providerSince", "provider_since", optional=True),
    ),
)
"""One refresh token of a session, outside the tenant partitions, under the SHA-256 of its secret:
a refresh finds its session with one GetItem. Kept (to its session's absolute expiry, TTL) after
the token is used, so a used token presented again is recognised as reuse. ``providerIssuer``
and ``providerSince`` name the organisation's own provider the session was begun through (its
record's issuer and ``createdAt``), carried from token to token: each refresh checks that
record still says so, so removing the provider ends the session. Absent for the platform's
provider, and on items written before they were recorded, which are read as a session begun
through no provider of the organisation's. No migration: which provider began an older
session was never stored, and such sessions end within their absolute lifetime."""

# --- the write path's records ------------------------------------------------------------------

AUDIT_EVENT: Final = Layout(
    AuditEvent,
    tag="AuditEvent",
    key=("ORG#{org_id}#AUDIT#{bucket}", "EVT#{event_id}"),
    derived={"bucket": lambda event: keys.audit_bucket(event.occurred_at)},
    attributes=(
        s(ORG_ID, "org_id"),
        s("eventId", "event_id"),
        ts("occurredAt", "occurred_at"),
        s("actorId", "actor_id", optional=True),
        s("action", "action"),
        s("entityType", "entity_type"),
        s("entityId", "entity_id"),
        custom("changes", "changes", _changes_wire, _changes_from),
        n("beforeVersion", "before_version", optional=True),
        n("afterVersion", "after_version", optional=True),
        s("idempotencyKey", "idempotency_key", optional=True),
        ts(ERASED_AT, "erased_at", optional=True),
        epoch(EXPIRES_AT, "expires_at", optional=True),
    ),
)

IDEMPOTENCY: Final = Layout(
    IdempotencyRecord,
    tag="Idempotency",
    key=("ORG#{org_id}#IDEM#{key}", "#IDEMPOTENCY"),
    attributes=(
        s(ORG_ID, "org_id"),
        s("operation", "operation"),
        s("fingerprint", "fingerprint"),
        item_map("result", "result"),
        ts(CREATED_AT, "created_at"),
        epoch(EXPIRES_AT, "expires_at"),
    ),
)

# --- the platform's own items ------------------------------------------------------------------

PERSISTED_DOCUMENT: Final = Layout(
    PersistedDocument,
    tag="PersistedDocument",
    key=("ORG#{org_id}#PQ#{sha256:document_slot}", "#DOCUMENT"),
    attributes=(s("sha256", "sha256"), s("document", "document"), epoch(EXPIRES_AT, "expires_at")),
)

LAYOUT_VERSION_ITEM: Final = Layout(
    LayoutStamp,
    tag="LayoutVersion",
    key=(keys.LAYOUT_PK, "#VERSION"),
    attributes=(n(LAYOUT_VERSION, "version"), ts("stampedAt", "stamped_at")),
)

MIGRATION_PROGRESS: Final = Layout(
    MigrationProgress,
    tag="MigrationProgress",
    key=(keys.LAYOUT_PK, "MIGRATION#{version:0000}#{org_id}"),
    attributes=(
        s("orgName", "org_name"),
        n("employeesIndexed", "employees_indexed"),
        n("countersRepaired", "counters_repaired"),
        boolean("withoutDomains", "without_domains"),
        strings("stepsDone", "steps_done", frozen=True),
        strings("domainsAssigned", "domains_assigned"),
        strings("domainsHeldElsewhere", "domains_held_elsewhere"),
        strings("domainsNotValid", "domains_not_valid"),
        strings("domainsOverLimit", "domains_over_limit"),
        n("eventsStamped", "events_stamped", optional=True),
    ),
)
"""What ``server.py migrate`` finished for one organisation, on the way to layout ``version``."""


# --- the stream readers' own items (datastore/feed/lease.py) -----------------------------------

FEED_LEASE: Final = Layout(
    FeedLease,
    tag="FeedLease",
    key=("FEED#{group}", "#LEASE"),
    attributes=(
        s("group", "group"),
        s("holder", "holder"),
        ts("leaseUntil", "lease_until"),
        n("generation", "generation"),
        ts("takenAt", "taken_at"),
        epoch(EXPIRES_AT, "expires_at"),
    ),
)
"""One server instance's stream-reader lease: a conditional write takes it once it has expired."""

FEED_CHECKPOINT: Final = Layout(
    FeedCheckpoint,
    tag="FeedCheckpoint",
    key=("FEED#{group}", "SHARD#{shard_id}"),
    attributes=(
        s("group", "group"),
        s("shardId", "shard_id"),
        s("streamArn", "stream_arn"),
        s("sequenceNumber", "sequence_number"),
        ts("updatedAt", "updated_at"),
        epoch(EXPIRES_AT, "expires_at"),
    ),
)
"""Where one server instance's reader is in one shard of the stream."""

# --- live updates on AWS: API Gateway WebSocket connections (datastore/tenants/live_connections.py) ----------------

GATEWAY_CONNECTION: Final = Layout(
    GatewayConnection,
    tag="GatewayConnection",
    key=("ORG#{org_id}#LIVE", "CONN#{connection_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s("connectionId", "connection_id"),
        s("subject", "subject"),
        s(ROLE, "role", optional=True),
        boolean("apiKey", "api_key"),
        s("sessionId", "session_id", optional=True),
        s("endpoint", "endpoint"),
        ts("connectedAt", "connected_at"),
        ts("tokenExpiresAt", "token_expires_at", optional=True),
        epoch(EXPIRES_AT, "expires_at"),
        boolean("acknowledged", "acknowledged"),
    ),
)
"""An authenticated WebSocket connection of the organisation, in its live partition (with its subscriptions)."""

GATEWAY_SUBSCRIPTION: Final = Layout(
    GatewaySubscription,
    tag="GatewaySubscription",
    key=("ORG#{org_id}#LIVE", "SUB#{connection_id}#{operation_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s("connectionId", "connection_id"),
        s("operationId", "operation_id"),
        s("field", "field"),
        s("document", "document"),
        s("variables", "variables"),
        s("operationName", "operation_name", optional=True),
        ts("subscribedAt", "subscribed_at"),
        epoch(EXPIRES_AT, "expires_at"),
        s("topic", "topic", optional=True),
        s("cursor", "cursor", optional=True),
    ),
)
"""One subscription of a connection: what the fan-out executes for each of the organisation's events."""

GATEWAY_LOOKUP: Final = Layout(
    GatewayLookup,
    tag="GatewayLookup",
    key=("WSCONN#{connection_id}", "#WSCONN"),
    attributes=(s(ORG_ID, "org_id"), s("connectionId", "connection_id"), epoch(EXPIRES_AT, "expires_at")),
)
"""A connection id's organisation, outside every tenant: API Gateway names a connection by its id alone."""

# --- an organisation's lifecycle records ---------------------------------------------------------


def _counts_wire(counts: Any) -> dict[str, Any]:
    return {"M": {kind: {"N": str(count)} for kind, count in sorted(counts.items())}}


def _counts_from(value: dict[str, Any]) -> dict[str, int]:
    # Sorted by kind: DynamoDB keeps no order in a map.
    return {kind: int(count["N"]) for kind, count in sorted(value["M"].items())}


RESTORE_RECORD: Final = Layout(
    RestoreRecord,
    tag="RestoreRecord",
    key=("LIFECYCLE#{org_id}", "RESTORE#{locked_at:timestamp}"),
    attributes=(
        s(ORG_ID, "org_id"),
        ts(LOCKED_AT, "locked_at"),
        s("source", "source"),
        s("actorId", "actor_id", optional=True),
        ts("finishedAt", "finished_at", optional=True),
        custom("written", "written", _counts_wire, _counts_from),
        custom("deleted", "deleted", _counts_wire, _counts_from),
        custom("unchanged", "unchanged", _counts_wire, _counts_from),
        n("passes", "passes"),
        n("countersRepaired", "counters_repaired"),
    ),
)
"""One restore of an organisation: where from, who, when, and what it wrote."""

DELETION_RECEIPT: Final = Layout(
    DeletionReceipt,
    tag="DeletionReceipt",
    key=("LIFECYCLE#{org_id}", "#DELETION"),
    attributes=(
        s(ORG_ID, "org_id"),
        s("orgName", "org_name"),
        s("requestedBy", "requested_by", optional=True),
        ts("closedAt", "closed_at"),
        ts("deleteAfter", "delete_after"),
        ts("startedAt", "started_at", optional=True),
        ts("finishedAt", "finished_at", optional=True),
        custom("deleted", "deleted", _counts_wire, _counts_from),
    ),
)
"""An organisation's offboarding: closed when and by whom, deleted when, and what."""

FORMER_DELETION: Final = Layout(
    DeletionReceipt,
    tag="FormerDeletion",
    key=("LIFECYCLE#{org_id}", "DELETION#{closed_at:timestamp}"),
    attributes=DELETION_RECEIPT.attributes,
)
"""The receipt of an earlier offboarding of an organisation restored since: a new offboarding
has a receipt of its own (DELETION_RECEIPT), and the one before is kept under its closing time."""

ERASURE_RECORD: Final = Layout(
    ErasureRecord,
    tag="ErasureRecord",
    key=("ORG#{org_id}#ERASED", "EMP#{emp_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s(EMP_ID, "emp_id"),
        ts(ERASED_AT, "erased_at"),
        item_map("tombstone", "tombstone"),
    ),
)
"""One person's erasure: the tombstone a restore writes in place of any intact copy of them.

In the organisation's own space (its data role and key guard cover it, so the erasure's own
transaction writes it), but in a partition no walk family names: never exported, never
replaced by a restore, kept by an offboarding (it holds no personal value)."""

LIFECYCLE_EVENT: Final = Layout(
    AuditEvent,
    tag="LifecycleEvent",
    key=("ORG#{org_id}#LIFECYCLE", "EVT#{event_id}"),
    attributes=AUDIT_EVENT.attributes,
)
"""A copy of an audit event of the organisation's lifecycle (closed, exported, restored, a
person erased): a restore puts it back in the trail, which it replaces from its source. In a
partition no walk family names, as the erasure records; it expires with the event (TTL)."""

# --- webhooks -------------------------------------------------------------------------------------

WEBHOOKS_PK: Final = keys.WEBHOOKS_PK
SECRET: Final = "secret"
PREVIOUS_SECRET: Final = "previousSecret"

WEBHOOK_ENDPOINT: Final = Layout(
    WebhookEndpoint,
    tag="WebhookEndpoint",
    key=("ORG#{org_id}", "WEBHOOK#{endpoint_id}"),
    # Every organisation's endpoints in one index partition: the dispatcher's list of the
    # organisations it delivers for (one Query), never their data (it reads that per tenant).
    index=(WEBHOOKS_PK, "{org_id}#{endpoint_id}"),
    attributes=(
        s(ORG_ID, "org_id"),
        s("endpointId", "endpoint_id"),
        s("url", "url"),
        words("eventTypes", "event_types"),
        s("description", "description"),
        boolean("enabled", "enabled"),
        ts(CREATED_AT, "created_at"),
        n(VERSION, "version"),
        s(SECRET, "secret", optional=True),
        s(PREVIOUS_SECRET, "previous_secret", optional=True),
        ts("previousSecretUntil", "previous_secret_until", optional=True),
        ts("failingSince", "failing_since", optional=True),
        s("disabledReason", "disabled_reason", optional=True),
    ),
    version=VERSION,
)
"""An organisation's webhook endpoint, with its signing secret (never exported)."""

WEBHOOK_DELIVERY: Final = Layout(
    WebhookDelivery,
    tag="WebhookDelivery",
    key=("ORG#{org_id}", "WHDLV#{endpoint_id}#{event_id}"),
    # The sparse index of an endpoint's pending deliveries, oldest event first: what the
    # dispatcher reads, and the order it keeps per object.
    index=("ORG#{org_id}#WHDUE#{endpoint_id}", "{event_id}"),
    index_when=lambda delivery: delivery.status is DeliveryStatus.PENDING,
    attributes=(
        s(ORG_ID, "org_id"),
        s("endpointId", "endpoint_id"),
        s("eventId", "event_id"),
        s("eventType", "event_type"),
        s("entityType", "entity_type"),
        s("entityId", "entity_id"),
        n("entityVersion", "entity_version", optional=True),
        ts("occurredAt", "occurred_at"),
        enum(STATUS, "status", DeliveryStatus),
        n("attempts", "attempts"),
        ts(CREATED_AT, "created_at"),
        epoch(EXPIRES_AT, "expires_at"),
        ts("nextAttemptAt", "next_attempt_at", optional=True),
        ts("lastAttemptAt", "last_attempt_at", optional=True),
        n("lastStatusCode", "last_status_code", optional=True),
        s("lastError", "last_error", optional=True),
    ),
)
"""One audit event owed to one endpoint (the outbox item), kept until ``expiresAt`` (TTL)."""

WEBHOOK_CURSOR: Final = Layout(
    WebhookCursor,
    tag="WebhookCursor",
    key=("ORG#{org_id}", "#WEBHOOK_CURSOR"),
    attributes=(s(ORG_ID, "org_id"), s("eventId", "event_id")),
)
"""How far through the organisation's audit trail the dispatcher has made deliveries."""

# --- the registry --------------------------------------------------------------------------------

KINDS: Final[tuple[Layout[Any], ...]] = tuple(value for value in list(globals().values()) if isinstance(value, Layout))
"""Every kind declared above, in declaration order: what the change feed decodes
(datastore/feed/records.py), and what export, restore, erasure and offboarding classify
(datastore/lifecycle/kinds.py), so a kind declared here is a kind they must account for
(tests/datastore/lifecycle/test_kinds.py fails until they do)."""
