"""What the datastore keeps for itself, beside the entities: each a value its layout stores.

Idempotency records (datastore/writes/idempotency.py), persisted GraphQL documents
(datastore/tenants/persisted_documents.py), the table's layout version (datastore/upkeep/layout_version.py), a
migration's progress for one organisation (datastore/upkeep/migration.py), a stream reader's lease
and checkpoints (datastore/feed/lease.py), the live connections and subscriptions of the
API Gateway WebSocket API (datastore/tenants/live_connections.py), where a sign-in session's live
subscriptions got to (datastore/signin/resume_points.py), an organisation's lifecycle records
(datastore/lifecycle/) and its erasure records (datastore/lifecycle/erased.py). Their kinds
are declared with the entities' in datastore/kinds/layout.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from datastore.values.ids import OrgId
from datastore.values.validation import EMAIL_DOMAINS_MAX


@dataclass(frozen=True, slots=True)
class IdempotencyRecord:
    """A write's first result under its idempotency key, kept until ``expires_at`` (TTL)."""

    org_id: OrgId
    key: str
    operation: str
    fingerprint: str
    result: dict[str, Any]
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class PersistedDocument:
    """A GraphQL document one organisation registered under its SHA-256 (lowercase hex)."""

    org_id: OrgId
    sha256: str
    document: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class LayoutStamp:
    """Which layout the table's data is in, and when that was recorded."""

    version: int
    stamped_at: datetime


@dataclass(frozen=True, slots=True)
class MigrationProgress:
    """What the migration to one layout has done for one organisation (its progress item)."""

    org_id: OrgId
    org_name: str
    steps_done: frozenset[str] = frozenset()
    employees_indexed: int = 0
    counters_repaired: int = 0
    domains_assigned: tuple[str, ...] = ()
    # Domains of its employees it was not given: another organisation holds them, they are
    # not valid domains by today's rules, or there were more than an organisation may own.
    domains_held_elsewhere: tuple[str, ...] = ()
    domains_not_valid: tuple[str, ...] = ()
    domains_over_limit: tuple[str, ...] = ()
    # The organisation owns no domain after the migration: createEmployee fails there until
    # an operator runs addEmailDomain.
    without_domains: bool = False
    # Layout 2: its audit events written before expiries, given one (None: not recorded,
    # a progress item of layout 1).
    events_stamped: int | None = None

    def problems(self) -> list[str]:
        """What an operator has to see to, one phrase each."""
        found = []
        if self.domains_held_elsewhere:
            found.append(f"held by another organisation: {', '.join(self.domains_held_elsewhere)}")
        if self.domains_not_valid:
            found.append(f"not valid email domains: {', '.join(self.domains_not_valid)}")
        if self.domains_over_limit:
            found.append(f"over the limit of {EMAIL_DOMAINS_MAX}: {', '.join(self.domains_over_limit)}")
        if self.without_domains:
            found.append("it owns no email domain now, so createEmployee fails there: run addEmailDomain")
        return found


@dataclass(frozen=True, slots=True)
class FeedLease:
    """Which process of a server instance reads the table's stream for it, and until when.

    ``holder`` names the process (its pid and start time); ``generation`` rises by one each
    time another process takes the lease, so a reader can tell its lease was taken over.
    """

    group: str
    holder: str
    lease_until: datetime
    generation: int
    taken_at: datetime
    # The table's TTL: a group whose every process is gone leaves nothing behind for long.
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class FeedCheckpoint:
    """The last record of one shard a server instance's reader handed on."""

    group: str
    shard_id: str
    stream_arn: str
    sequence_number: str
    updated_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class RestoreRecord:
    """What one restore of an organisation did (datastore/lifecycle/restore.py), kept in its
    lifecycle records, outside its partitions: the restored data holds no trace of it."""

    org_id: OrgId
    # When the restore locked the organisation: the record's id.
    locked_at: datetime
    source: str
    actor_id: str | None = None
    finished_at: datetime | None = None
    # Items put, deleted, and found already as the source has them, by kind.
    written: Mapping[str, int] = field(default_factory=dict)
    deleted: Mapping[str, int] = field(default_factory=dict)
    unchanged: Mapping[str, int] = field(default_factory=dict)
    passes: int = 0
    counters_repaired: int = 0


@dataclass(frozen=True, slots=True)
class ErasureRecord:
    """That one person was erased (datastore/lifecycle/erasure.py), kept in the organisation's
    erasures partition, which no export carries and no restore or offboarding touches: a
    restore puts ``tombstone`` (the employee's item as the erasure left it, no personal value
    in it) in place of any intact copy of the person, so no source brings them back."""

    org_id: OrgId
    emp_id: str
    erased_at: datetime
    # The employee item as the erasure wrote it (DynamoDB's JSON): what a restore writes.
    tombstone: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DeletionReceipt:
    """The proof that an organisation was offboarded (datastore/lifecycle/offboarding.py): who
    asked, when, and how many items of each kind were deleted. Kept in its lifecycle records,
    outside its partitions, so it outlives them."""

    org_id: OrgId
    org_name: str
    requested_by: str | None
    closed_at: datetime
    # No item is deleted before this (the grace period after closing).
    delete_after: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # The organisation's items by kind, counted once when the deletion began: what it deleted.
    deleted: Mapping[str, int] = field(default_factory=dict)

    @property
    def counted(self) -> bool:
        return self.started_at is not None


@dataclass(frozen=True, slots=True)
class GatewayConnection:
    """One API Gateway WebSocket connection that has been authenticated, in its organisation's
    live partition: who is connected (the verified caller, never the credential) and where to
    post to them.

    ``role`` is the role the caller's token named (None for an API key): each delivery checks
    it against the employee's current role, as every request does. ``endpoint`` is the
    connection's management API (``https://<domain>/<stage>``). ``expires_at`` (the table's
    TTL) is API Gateway's two-hour connection limit, or the token's expiry if earlier and the
    token has no session (one from sign-in is checked against its session at its expiry, and
    ``token_expires_at`` is then moved to the session's end).
    """

    org_id: OrgId
    connection_id: str
    subject: str
    role: str | None
    api_key: bool
    session_id: str | None
    endpoint: str
    connected_at: datetime
    token_expires_at: datetime | None
    expires_at: datetime
    # Answered ``connection_ack``: authenticated by the handshake's header alone, it is not yet.
    acknowledged: bool = False


@dataclass(frozen=True, slots=True)
class GatewaySubscription:
    """One subscription of a connection: the operation's id, the GraphQL document as it was
    validated (a persisted or trusted document already resolved to its text), its variables
    (JSON) and its root field, which the fan-out routes on before executing anything."""

    org_id: OrgId
    connection_id: str
    operation_id: str
    field: str
    document: str
    variables: str
    operation_name: str | None
    subscribed_at: datetime
    expires_at: datetime
    # A sign-in session's subscription: its topic (field and arguments) and the cursor of its
    # start or of the last event posted, saved for a resume when the connection ends. Absent
    # on items written before they were kept (and for other callers): nothing to resume.
    topic: str | None = None
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """The cursor of the last event a sign-in session's subscription was sent, saved when its
    connection ended, for a reconnect to any process to resume from (``subscription``: the
    SHA-256 of the subscription's field and arguments)."""

    org_id: OrgId
    emp_id: str
    session_id: str
    subscription: str
    cursor: str
    saved_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class GatewayLookup:
    """Which organisation a connection id belongs to: API Gateway hands ``$default`` and
    ``$disconnect`` the connection id alone."""

    connection_id: str
    org_id: OrgId
    expires_at: datetime
