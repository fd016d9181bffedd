"""Who a Table speaks for: the partitions it may read and write.

Tenant isolation is enforced here, once, rather than in each caller: a Table refuses to send
a request whose partition key (table or index) lies outside its scope, and refuses every item
it gets back from outside it. The scopes that reach beyond one tenant are few and named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from datastore.tenancy import keys
from datastore.values.ids import OrgId


class Scope(Protocol):
    @property
    def name(self) -> str: ...

    def may_read(self, partition_key: str) -> bool: ...

    def may_write(self, partition_key: str) -> bool: ...

    def may_check(self, partition_key: str) -> bool:
        """May a transaction's ConditionCheck name this partition (it reads nothing back)."""
        ...


@dataclass(frozen=True, slots=True)
class TenantScope:
    """One organisation's data, as seen by one caller (``actor_id``, for audit)."""

    org_id: OrgId
    actor_id: str | None = None
    # Built once: every item a read receives is checked against it (datastore.table.scoped.admit).
    _space: keys.TenantSpace = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_space", keys.TenantSpace.of(self.org_id))

    @property
    def name(self) -> str:
        return f"tenant {self.org_id}"

    def may_read(self, partition_key: str) -> bool:
        return self._space.holds(partition_key)

    def may_write(self, partition_key: str) -> bool:
        # Identity items guard platform-wide email uniqueness, so creating an employee or
        # changing an email writes one; a tenant can never read one back. Creating and
        # revoking an API key writes its lookup item (datastore/signin/api_keys.py), registering an
        # identity provider its client items (datastore/signin/identity_providers.py), and signing
        # in a refresh token's lookup item (datastore/signin/sessions.py): none is read here.
        return (
            self.may_read(partition_key)
            or keys.is_identity_pk(partition_key)
            or keys.is_api_key_lookup_pk(partition_key)
            or keys.is_issuer_pk(partition_key)
            or keys.is_refresh_lookup_pk(partition_key)
            or keys.is_ws_connection_pk(partition_key)
        )

    def may_check(self, partition_key: str) -> bool:
        # An employee's email must be in a domain its organisation owns: the write checks the
        # domain's marker in its own transaction. Tenants never read or write markers.
        return self.may_write(partition_key) or keys.is_domain_pk(partition_key)


@dataclass(frozen=True, slots=True)
class SignInScope:
    """Who is signing in, before any tenant is known: an email's organisation and employee
    (identity items), the organisation whose provider issued an ID token (identity provider
    clients), a refresh token's session (its lookup item), and which organisation owns an
    email's domain (domain markers, for ``GET /auth/discovery``). Reads only."""

    @property
    def name(self) -> str:
        return "sign-in"

    def may_read(self, partition_key: str) -> bool:
        return (
            keys.is_identity_pk(partition_key)
            or keys.is_issuer_pk(partition_key)
            or keys.is_refresh_lookup_pk(partition_key)
            or keys.is_domain_pk(partition_key)
        )

    def may_write(self, partition_key: str) -> bool:
        return False

    def may_check(self, partition_key: str) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class ApiKeyScope:
    """Authenticating a bearer API key before any tenant is known: its lookup item, read only."""

    @property
    def name(self) -> str:
        return "API key authentication"

    def may_read(self, partition_key: str) -> bool:
        return keys.is_api_key_lookup_pk(partition_key)

    def may_write(self, partition_key: str) -> bool:
        return False

    def may_check(self, partition_key: str) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class GatewayScope:
    """An API Gateway WebSocket message or disconnection, before its tenant is known: the
    connection's lookup item (``WSCONN#<connectionId>``), read only."""

    @property
    def name(self) -> str:
        return "WebSocket connection lookup"

    def may_read(self, partition_key: str) -> bool:
        return keys.is_ws_connection_pk(partition_key)

    def may_write(self, partition_key: str) -> bool:
        return False

    def may_check(self, partition_key: str) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class LayoutScope:
    """The table's data-layout items: its version, read at start-up, and the progress of a
    migration (``server.py migrate``). No tenant data."""

    @property
    def name(self) -> str:
        return "data layout"

    def may_read(self, partition_key: str) -> bool:
        return keys.is_layout_pk(partition_key)

    def may_write(self, partition_key: str) -> bool:
        return keys.is_layout_pk(partition_key)

    def may_check(self, partition_key: str) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class FeedScope:
    """A server instance's stream reader: its lease and its checkpoints (``FEED#<group>``), in
    its own group's partition only. No tenant data."""

    group: str

    @property
    def name(self) -> str:
        return f"feed {self.group}"

    def may_read(self, partition_key: str) -> bool:
        return partition_key == keys.FEED + keys.SEP + self.group

    def may_write(self, partition_key: str) -> bool:
        return self.may_read(partition_key)

    def may_check(self, partition_key: str) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class WebhooksScope:
    """The dispatcher's view across tenants: the index partition listing every organisation's
    endpoints (``WEBHOOKS``), read only. Each organisation's own items it reads and writes
    through that organisation's TenantScope."""

    @property
    def name(self) -> str:
        return "webhook dispatch"

    def may_read(self, partition_key: str) -> bool:
        return partition_key == keys.WEBHOOKS_PK

    def may_write(self, partition_key: str) -> bool:
        return False

    def may_check(self, partition_key: str) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class PlatformScope:
    """The platform operator: the list of organisations, creating one, adding its domains,
    registering its identity provider at onboarding.

    ``provisioning`` names the one organisation being created, given a domain or a provider,
    whose partition the operator may write into (and read back) for the length of that
    write, along with the identity item of its first admin, its email domain markers and its
    provider's client items.
    """

    provisioning: OrgId | None = None
    # The operator acting, for audit.
    actor_id: str | None = None

    @property
    def name(self) -> str:
        return "platform"

    def may_read(self, partition_key: str) -> bool:
        if partition_key == keys.ORGS_PK:
            return True
        return self.provisioning is not None and partition_key == keys.org_pk(self.provisioning)

    def may_write(self, partition_key: str) -> bool:
        if self.provisioning is None:
            return False
        return (
            keys.in_tenant(partition_key, self.provisioning)
            or keys.is_identity_pk(partition_key)
            or keys.is_domain_pk(partition_key)
            or keys.is_issuer_pk(partition_key)
        )

    def may_check(self, partition_key: str) -> bool:
        return self.may_write(partition_key)


Purpose = Literal["export", "restore", "offboard"]


@dataclass(frozen=True, slots=True)
class LifecycleScope:
    """One organisation's whole data, for its export (reads only), restore or offboarding.

    Its own partitions, and the items outside every tenant's partitions that name it: the
    identity items of its employees' emails, its email-domain markers and its identity
    provider's clients (``EMAIL#``, ``DOMAIN#``, ``ISSUER#``), and, for a restore or an
    offboarding but never an export, its API keys' lookup items (``APIKEY#``: credentials)
    and, to read only, the table's layout version (a restore checks its source's).
    A key outside the tenant's space does not say whose it is, so the lifecycle code reads
    only the keys the organisation's own items name and keeps only items whose ``orgId`` is
    the organisation (datastore/lifecycle/walk.py), and writes them only on that condition.
    """

    org_id: OrgId
    purpose: Purpose
    # The operator or admin acting, for audit and the lifecycle records.
    actor_id: str | None = None

    @property
    def name(self) -> str:
        return f"{self.purpose} of {self.org_id}"

    def may_read(self, partition_key: str) -> bool:
        return (
            keys.in_tenant(partition_key, self.org_id)
            or keys.is_identity_pk(partition_key)
            or keys.is_domain_pk(partition_key)
            or keys.is_issuer_pk(partition_key)
            or (
                self.purpose != "export"
                and (
                    keys.is_api_key_lookup_pk(partition_key)
                    or partition_key == keys.lifecycle_pk(self.org_id)
                    # The layout version: a restore checks its source's.
                    or keys.is_layout_pk(partition_key)
                )
            )
        )

    def may_write(self, partition_key: str) -> bool:
        return self.purpose != "export" and self.may_read(partition_key) and not keys.is_layout_pk(partition_key)

    def may_check(self, partition_key: str) -> bool:
        return self.may_write(partition_key)


def actor_of(scope: Scope) -> str | None:
    """Who writes through ``scope``, as the audit trail names them."""
    if isinstance(scope, TenantScope | PlatformScope | LifecycleScope):
        return scope.actor_id
    return None
