"""What export, erasure and offboarding do with each kind of item: one row per declared kind.

The kinds come from the one registry (``layout.KINDS``), never a hand list: a kind declared
in datastore/kinds/layout.py without a row here fails tests/datastore/lifecycle/test_kinds.py, so
no kind can be added that an export silently leaves out, an erasure leaves a person's data
in, or an offboarding leaves behind.

Export. INCLUDED kinds are written to an export and put back by a restore; SECRET kinds are
credentials and never leave the table (an API key's lookup item is keyed by the hash of its
secret), and ``secret`` names a credential inside an included kind that is left out of it
(an API key record's hash); CACHE kinds are copies a client recreates by itself (persisted
GraphQL documents, re-registered on a client's next request: not exported, and a restore
leaves them as they are); SIGN_IN kinds are the state of who is signed in now (sessions,
sign-out marks: not exported, and a restore leaves them as they are, since a backup must not
sign anyone back in or out); PLATFORM kinds belong to no tenant (the layout version, migration
progress, lifecycle records, the stream readers' leases and checkpoints); RECORD kinds are the
organisation's records of what was done to its data that a restore must obey (erasures) or
put back (the lifecycle's audit events): in
a partition no export reads and no restore replaces, so no file or table can undo them;
INLINE kinds are never items of their own.

Erasure (of one person). TOMBSTONE: the employee's item, kept without its personal values;
DELETE: items that only copy or point at the person (membership and name entries, the email
pointer and identity, idempotency records of writes about them); REDACT: kept, with the
person's values removed (audit events about them); KEEP: items about the person holding no
personal value (applications and applicant guards: ids and statuses); NONE: never about a
person. ``personal`` names the attributes holding personal values.

Offboarding (of an organisation). DELETE: in the organisation's partitions; RELEASE:
outside them but naming it (identity items, domain markers, API key lookups, identity
provider clients), deleted on the condition that they still name it, which frees the email,
domain or client id for anyone; EXPIRE: outside them and named by nothing the organisation
holds (a refresh token's lookup, keyed by the hash of a secret nobody keeps), so unreachable
without a Scan: refused from the moment the organisation closes and deleted by the table's
TTL (the kind must declare ``expiresAt``, a test checks); KEEP: the platform's own (never the
organisation's data), and the organisation's RECORD kinds, which hold no personal value and
must outlive its data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from datastore.kinds import layout
from datastore.kinds.model import Layout


class Export(Enum):
    INCLUDED = "included"
    SECRET = "secret"
    CACHE = "cache"
    SIGN_IN = "sign-in"
    PLATFORM = "platform"
    RECORD = "record"
    INLINE = "inline"


class Erasure(Enum):
    TOMBSTONE = "tombstone"
    DELETE = "delete"
    REDACT = "redact"
    KEEP = "keep"
    NONE = "none"


class Offboarding(Enum):
    DELETE = "delete"
    RELEASE = "release"
    EXPIRE = "expire"
    KEEP = "keep"


@dataclass(frozen=True, slots=True)
class Policy:
    export: Export
    erasure: Erasure
    offboarding: Offboarding
    # Attributes holding a person's personal values (what erasure removes or deletes).
    personal: tuple[str, ...] = ()
    # Attributes never exported: a credential inside an included item.
    secret: tuple[str, ...] = ()


# An employee's personal values, in every copy of the employee (and in audit changes).
PERSONAL: Final = (layout.EMAIL, "firstName", "lastName")

_TENANT_DATA: Final = Policy(Export.INCLUDED, Erasure.NONE, Offboarding.DELETE)
_PLATFORM: Final = Policy(Export.PLATFORM, Erasure.NONE, Offboarding.KEEP)

POLICIES: Final[Mapping[str, Policy]] = {
    layout.ORGANIZATION.tag: _TENANT_DATA,
    layout.SUBSCRIPTION.tag: _TENANT_DATA,
    layout.EMAIL_DOMAIN.tag: Policy(Export.INCLUDED, Erasure.NONE, Offboarding.RELEASE),
    layout.DEPARTMENT.tag: _TENANT_DATA,
    layout.EMPLOYEE.tag: Policy(Export.INCLUDED, Erasure.TOMBSTONE, Offboarding.DELETE, PERSONAL),
    layout.MEMBERSHIP.tag: Policy(Export.INCLUDED, Erasure.DELETE, Offboarding.DELETE, PERSONAL),
    layout.NAME_ENTRY.tag: Policy(Export.INCLUDED, Erasure.DELETE, Offboarding.DELETE, PERSONAL),
    # Its sort key is the email.
    layout.EMAIL_POINTER.tag: Policy(Export.INCLUDED, Erasure.DELETE, Offboarding.DELETE, (layout.EMAIL,)),
    layout.IDENTITY.tag: Policy(Export.INCLUDED, Erasure.DELETE, Offboarding.RELEASE, (layout.EMAIL,)),
    layout.MOVE_RESULT.tag: Policy(Export.INLINE, Erasure.NONE, Offboarding.KEEP),
    layout.JOB_POSTING.tag: _TENANT_DATA,
    layout.APPLICATION.tag: Policy(Export.INCLUDED, Erasure.KEEP, Offboarding.DELETE),
    layout.APPLICANT.tag: Policy(Export.INCLUDED, Erasure.KEEP, Offboarding.DELETE),
    layout.API_KEY.tag: Policy(Export.INCLUDED, Erasure.NONE, Offboarding.DELETE, secret=(layout.SECRET_HASH,)),
    layout.API_KEY_LOOKUP.tag: Policy(Export.SECRET, Erasure.NONE, Offboarding.RELEASE),
    # Sign-in: the provider's record is the organisation's data; its clients are lookup items
    # outside the partitions, like identities. Sessions hold ids and times, no personal value.
    layout.IDENTITY_PROVIDER.tag: _TENANT_DATA,
    layout.ISSUER_CLIENT.tag: Policy(Export.INCLUDED, Erasure.NONE, Offboarding.RELEASE),
    layout.SESSION.tag: Policy(Export.SIGN_IN, Erasure.KEEP, Offboarding.DELETE),
    layout.SIGNED_OUT.tag: Policy(Export.SIGN_IN, Erasure.KEEP, Offboarding.DELETE),
    # Where a session's live subscriptions got to (datastore/signin/resume_points.py): ids and a cursor.
    layout.RESUME_POINT.tag: Policy(Export.SIGN_IN, Erasure.KEEP, Offboarding.DELETE),
    layout.REFRESH_LOOKUP.tag: Policy(Export.SECRET, Erasure.NONE, Offboarding.EXPIRE),
    layout.AUDIT_EVENT.tag: Policy(Export.INCLUDED, Erasure.REDACT, Offboarding.DELETE, ("changes",)),
    # Its result is the written entity, the person's values included.
    layout.IDEMPOTENCY.tag: Policy(Export.INCLUDED, Erasure.DELETE, Offboarding.DELETE, ("result",)),
    # Its text is a client's: it may hold a person's email or name (a query saved with them).
    layout.PERSISTED_DOCUMENT.tag: Policy(Export.CACHE, Erasure.DELETE, Offboarding.DELETE, ("document",)),
    layout.LAYOUT_VERSION_ITEM.tag: _PLATFORM,
    layout.MIGRATION_PROGRESS.tag: _PLATFORM,
    # Outside the organisation's partitions on purpose: the record outlives its data.
    layout.RESTORE_RECORD.tag: _PLATFORM,
    layout.DELETION_RECEIPT.tag: _PLATFORM,
    layout.FORMER_DELETION.tag: _PLATFORM,
    # That a person was erased, and their tombstone: no personal value. Kept when the
    # organisation is offboarded, so a restore of an older export never brings them back.
    layout.ERASURE_RECORD.tag: Policy(Export.RECORD, Erasure.NONE, Offboarding.KEEP),
    # The lifecycle's audit events (closed, exported, restored, erased), put back by a restore.
    layout.LIFECYCLE_EVENT.tag: Policy(Export.RECORD, Erasure.NONE, Offboarding.KEEP),
    # A server instance's stream reader's lease and checkpoints (datastore/feed/): no tenant's.
    layout.FEED_LEASE.tag: _PLATFORM,
    layout.FEED_CHECKPOINT.tag: _PLATFORM,
    # Who is connected now over API Gateway's WebSocket API, and to what (datastore/tenants/live_connections.py):
    # the state of a connection, never exported or restored, as sign-in's. The connection holds
    # the employee's id and role, no personal value; its lookup is named by nothing but the
    # connection item and expires with it (TTL, two hours at most).
    layout.GATEWAY_CONNECTION.tag: Policy(Export.SIGN_IN, Erasure.KEEP, Offboarding.DELETE),
    # A subscription's document and variables are its client's and may name a person: not
    # erased (ending it would leave a client believing it is subscribed), and gone with its
    # connection within two hours (TTL).
    layout.GATEWAY_SUBSCRIPTION.tag: Policy(Export.SIGN_IN, Erasure.NONE, Offboarding.DELETE),
    layout.GATEWAY_LOOKUP.tag: Policy(Export.SIGN_IN, Erasure.NONE, Offboarding.EXPIRE),
    # Webhooks (datastore/webhooks/): an endpoint is the organisation's data, its signing
    # secrets are credentials (a restored endpoint has none and asks for a rotation); a
    # delivery holds ids, an action and times, no personal value; the dispatcher's cursor is an
    # event id (a restore putting an older one back makes the dispatcher read more, and find
    # the deliveries it has already recorded).
    layout.WEBHOOK_ENDPOINT.tag: Policy(
        Export.INCLUDED, Erasure.NONE, Offboarding.DELETE, secret=(layout.SECRET, layout.PREVIOUS_SECRET)
    ),
    layout.WEBHOOK_DELIVERY.tag: _TENANT_DATA,
    layout.WEBHOOK_CURSOR.tag: _TENANT_DATA,
}


def unclassified() -> list[str]:
    """Declared kinds without a row: each one a gap in export, erasure or offboarding."""
    return [kind.tag for kind in layout.KINDS if kind.tag not in POLICIES]


def policy_of(tag: str) -> Policy:
    """The row of the kind an item's ``entity`` attribute names; KeyError for a kind without one."""
    return POLICIES[tag]


def kinds_where(**wanted: Enum) -> list[Layout[Any]]:
    """The declared kinds whose policy has every value given: ``kinds_where(export=Export.INCLUDED)``."""
    return [
        kind
        for kind in layout.KINDS
        if kind.tag in POLICIES and all(getattr(POLICIES[kind.tag], name) is value for name, value in wanted.items())
    ]
