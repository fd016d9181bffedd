"""The table's key vocabulary: the prefixes, the tenant spaces, and what the scopes check.

Each kind's own keys are templates in its declaration (datastore/kinds/layout.py, which lists them
all); this module holds what those templates share with the scopes, the key guard and the
IAM policies, and what parses a key.

Every tenant partition key (table and index) starts with ``ORG#<org>``; the identity items,
the email domain markers, the platform's organisation list, the API key lookup items
(keyed by the SHA-256 of a key's secret, so a bearer key is found with one GetItem before its
tenant is known), the identity provider clients (``ISSUER#<issuer>``, so sign-in finds the
organisation whose provider issued an ID token with one GetItem), the refresh token lookup
items (``REFRESH#<sha256>``, as the API keys'), the table's data-layout items and each
organisation's lifecycle records (``LIFECYCLE#<org>``: its restores and its deletion receipt,
kept outside its partitions so they outlive its data) are the only others. A domain marker names
the one organisation that owns an email domain, platform-wide. The layout version item says
which layout the table's data is in (datastore/upkeep/layout_version.py); a migration's progress item
records what ``server.py migrate`` finished for one organisation (datastore/upkeep/migration.py).

A persisted GraphQL document (Apollo's APQ, datastore/tenants/persisted_documents.py) belongs to the
organisation that registered it, in one of 4,096 slots named by the first three hex digits
of its SHA-256: an organisation holds at most that many, and a document whose slot another
holds replaces it. Releases before this layout kept documents under ``PQ#<sha256>``, outside
every organisation; nothing reads those any more and the table's TTL deletes them within 30
days of their last registration.

Live updates keep one kind of item outside every tenant's partitions: a server instance's
stream reader (datastore/feed/) keeps its lease and its per-shard checkpoints in its own
partition, ``FEED#<group>``, the group naming the instance (host, supervisor pid and start
time), so instances never meet. On AWS, API Gateway names a WebSocket connection by its id alone, so
each authenticated connection has a lookup item ``WSCONN#<connectionId>`` naming its
organisation; its connection and subscriptions are in the organisation's ``ORG#<org>#LIVE``.

An employee has one name entry per distinct prefix of its folded first and last names, and
one under the empty prefix (the whole directory). The sort key orders a partition by folded
last name, then folded first name, then employee id; its separator (U+0001) sorts below every
character a name may hold (validation refuses control characters), so "Ng" precedes "Ng Li".

Audit events are bucketed by the UTC month they happened in, so a busy tenant spreads its
trail over one partition per month; the event id is a ULID minted from the event's time, so
sort-key order within a bucket is time order. An idempotency record's key is the client's
idempotency key, so a retry finds the record of its first attempt with one GetItem.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, NamedTuple

from datastore.errors import Field, InvalidInput

SEP: Final = "#"

ORG: Final = "ORG"
EMAIL: Final = "EMAIL"
DOMAIN: Final = "DOMAIN"
APIKEY: Final = "APIKEY"
AUDIT: Final = "AUDIT"
# Sign-in's lookups outside every tenant: an identity provider's client by its issuer, and a
# session's refresh token by the SHA-256 of its secret (datastore/signin/identity_providers.py,
# datastore/signin/sessions.py).
ISSUER: Final = "ISSUER"
REFRESH: Final = "REFRESH"
# A server instance's stream reader: its lease and checkpoints (datastore/feed/lease.py).
FEED: Final = "FEED"
# An API Gateway WebSocket connection's organisation, by the connection id API Gateway gives
# (datastore/tenants/live_connections.py).
WSCONN: Final = "WSCONN"
# An organisation's lifecycle records (restores, its deletion receipt): outside its partitions,
# so they outlive its data (datastore/lifecycle/).
LIFECYCLE: Final = "LIFECYCLE"

# begins_with on this returns exactly the organisation's own items (#METADATA, #SUBSCRIPTION).
ORG_HEADER_PREFIX: Final = "#"
ORGS_PK: Final = "ORGS"
# The table's data-layout version and the progress of migrations to it: one partition,
# outside every tenant's, read at start-up and written by ``server.py migrate``.
LAYOUT_PK: Final = "LAYOUT"
# The index partition listing every organisation's webhook endpoints (whoever delivers reads it).
WEBHOOKS_PK: Final = "WEBHOOKS"

PK: Final = "PK"
SK: Final = "SK"
GSI1: Final = "GSI1"
GSI1PK: Final = "GSI1PK"
GSI1SK: Final = "GSI1SK"

IDEMPOTENCY_KEY_MAX: Final = 128
# Printable ASCII without spaces: UUIDs, ULIDs and the usual client-generated tokens.
_IDEMPOTENCY_KEY = re.compile(rf"[!-~]{{1,{IDEMPOTENCY_KEY_MAX}}}")
_AUDIT_BUCKET = re.compile(r"(\d{4})-(\d{2})")
# A persisted document's id: its SHA-256, lowercase hex.
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Hex digits of a document's SHA-256 that name its slot: 16**3 = 4,096 slots per organisation.
DOCUMENT_SLOT_DIGITS: Final = 3


class Key(NamedTuple):
    """A primary key of the table.

    A tuple, not a dataclass: a key is hashed several times on its way through a batch (the
    loader's maps, the batch's de-duplication, matching the answers), and a tuple hashes in C
    where a frozen dataclass runs a Python ``__hash__`` (Q4's 100 nodes: about 600 a request).
    As a tuple it equals ``(pk, sk)`` and unpacks to it; orjson does not serialise it (``wire``).
    """

    pk: str
    sk: str

    def wire(self) -> dict[str, dict[str, str]]:
        return {PK: {"S": self.pk}, SK: {"S": self.sk}}


def _join(*parts: str) -> str:
    return SEP.join(parts)


# --- idempotency keys -------------------------------------------------------------------


def parse_idempotency_key(value: str, field: Field = "idempotency_key") -> str:
    if not isinstance(value, str) or _IDEMPOTENCY_KEY.fullmatch(value) is None:
        raise InvalidInput(field, f"must be 1 to {IDEMPOTENCY_KEY_MAX} printable ASCII characters without spaces")
    return value


def is_sha256(value: str) -> bool:
    """A SHA-256 as lowercase hex: a persisted document's id, an API key's secret hashed."""
    return _SHA256.fullmatch(value) is not None


# --- audit buckets ----------------------------------------------------------------------


def audit_bucket(at: datetime) -> str:
    """The month bucket (``yyyy-mm``, UTC) of an audit event that happened at ``at``."""
    return at.astimezone(UTC).strftime("%Y-%m")


def previous_audit_bucket(bucket: str) -> str:
    year, month = _bucket_parts(bucket)
    return f"{year - 1:04d}-12" if month == 1 else f"{year:04d}-{month - 1:02d}"


def next_audit_bucket(bucket: str) -> str:
    year, month = _bucket_parts(bucket)
    return f"{year + 1:04d}-01" if month == 12 else f"{year:04d}-{month + 1:02d}"


def _bucket_parts(bucket: str) -> tuple[int, int]:
    match = _AUDIT_BUCKET.fullmatch(bucket)
    if match is None or not 1 <= int(match.group(2)) <= 12:
        raise ValueError(f"{bucket!r} is not an audit bucket")
    return int(match.group(1)), int(match.group(2))


def audit_bucket_of(partition_key: str, org_id: str) -> str | None:
    """The month bucket of ``org_id``'s audit partition ``partition_key``; None for any other."""
    prefix = _join(ORG, org_id, AUDIT) + SEP
    if not partition_key.startswith(prefix):
        return None
    bucket = partition_key[len(prefix) :]
    try:
        _bucket_parts(bucket)
    except ValueError:
        return None
    return bucket


# --- partition spaces: what the scopes, the key guard and the IAM policies check -----------


def org_pk(org_id: str) -> str:
    """An organisation's own partition, which every one of its partition keys starts with."""
    return _join(ORG, org_id)


@dataclass(frozen=True, slots=True)
class TenantSpace:
    """One organisation's partition space, its two forms built once (``of``): a TenantScope
    checks every item it receives against it, so the prefix is not rebuilt per item."""

    own: str  # the organisation's own partition, ``ORG#<org>``
    below: str  # what every other partition of it starts with, ``ORG#<org>#``

    @classmethod
    def of(cls, org_id: str) -> TenantSpace:
        own = org_pk(org_id)
        return cls(own, own + SEP)

    def holds(self, partition_key: str) -> bool:
        """True when ``partition_key`` belongs to this space.

        ULIDs have a fixed length, but the check does not rely on it: the tenant prefix must
        be followed by the end of the key or a separator.
        """
        return partition_key == self.own or partition_key.startswith(self.below)


@functools.lru_cache(maxsize=256)
def _space_of(org_id: str) -> TenantSpace:
    # The lifecycle scope and walk ask per item of one organisation: its space is built once.
    return TenantSpace.of(org_id)


def in_tenant(partition_key: str, org_id: str) -> bool:
    """True when ``partition_key`` belongs to ``org_id``'s partition space (``TenantSpace.holds``)."""
    return _space_of(org_id).holds(partition_key)


def is_api_key_lookup_pk(partition_key: str) -> bool:
    return partition_key.startswith(APIKEY + SEP)


def is_issuer_pk(partition_key: str) -> bool:
    return partition_key.startswith(ISSUER + SEP)


def is_refresh_lookup_pk(partition_key: str) -> bool:
    return partition_key.startswith(REFRESH + SEP)


def lifecycle_pk(org_id: str) -> str:
    """The partition of an organisation's lifecycle records, outside its own space."""
    return _join(LIFECYCLE, org_id)


def is_lifecycle_pk(partition_key: str) -> bool:
    return partition_key.startswith(LIFECYCLE + SEP)


def is_layout_pk(partition_key: str) -> bool:
    return partition_key == LAYOUT_PK


def is_feed_pk(partition_key: str) -> bool:
    """A stream reader's lease and checkpoints (datastore/feed/lease.py)."""
    return partition_key.startswith(FEED + SEP)


def is_ws_connection_pk(partition_key: str) -> bool:
    """An API Gateway WebSocket connection's lookup item (datastore/tenants/live_connections.py)."""
    return partition_key.startswith(WSCONN + SEP)


def is_identity_pk(partition_key: str) -> bool:
    return partition_key.startswith(EMAIL + SEP)


def is_domain_pk(partition_key: str) -> bool:
    return partition_key.startswith(DOMAIN + SEP)


def org_id_of(partition_key: str) -> str | None:
    """The tenant a partition key belongs to, or None outside every organisation (a stream
    record's organisation, datastore/feed/records.py; the key guard)."""
    parts = partition_key.split(SEP)
    if len(parts) >= 2 and parts[0] == ORG:
        return parts[1]
    return None


def start_key_partition(start_key: Mapping[str, str], index: str | None) -> str | None:
    """The partition a pagination start key belongs to (the index's when querying one)."""
    return start_key.get(GSI1PK if index == GSI1 else PK)
