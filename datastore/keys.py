"""Every key of the table is built and parsed here, and nowhere else.

Layout (PK / SK, and GSI1PK / GSI1SK where an item is in the index):

    Organisation     ORG#<org>                 #METADATA        ORGS / <name>#<org>
    Subscription     ORG#<org>                 #SUBSCRIPTION
    Department       ORG#<org>                 DEPT#<dept>
    Employee         ORG#<org>                 EMP#<emp>        ORG#<org>#EMP / <hiredAt>#<emp>
    Email pointer    ORG#<org>                 EMAIL#<email>
    Name entry       ORG#<org>#NAME#<prefix>   <last>\x01<first>\x01<emp>   (names folded, datastore/names.py)
    Membership       ORG#<org>#DEPT#<dept>     EMP#<emp>
    Identity         EMAIL#<email>             #IDENTITY
    Email domain     DOMAIN#<domain>           #DOMAIN
    JobPosting       ORG#<org>                 JOB#<job>        (open only) ORG#<org>#OPEN / JOB#<postedAt>#<job>
    Application      ORG#<org>#JOB#<job>       APP#<app>        ORG#<org>#EMP#<emp> / APP#<app>
    Applicant        ORG#<org>#JOB#<job>       APPLICANT#<emp>
    AuditEvent       ORG#<org>#AUDIT#<yyyy-mm> EVT#<event>
    Idempotency      ORG#<org>#IDEM#<key>      #IDEMPOTENCY
    Persisted doc    ORG#<org>#PQ#<slot>       #DOCUMENT        (slot: the SHA-256's first 3 hex digits)
    API key          ORG#<org>                 APIKEY#<key>
    API key lookup   APIKEY#<sha256>           #APIKEY
    Layout version   LAYOUT                    #VERSION
    Migrated org     LAYOUT                    MIGRATION#<version>#<org>

Every tenant partition key (table and index) starts with ``ORG#<org>``; the identity items,
the email domain markers, the platform's organisation list, the API key lookup items
(keyed by the SHA-256 of a key's secret, so a bearer key is found with one GetItem before its
tenant is known) and the table's data-layout items are the only others. A domain marker names
the one organisation that owns an email domain, platform-wide. The layout version item says
which layout the table's data is in (datastore/layout_version.py); a migration's progress item
records what ``server.py migrate`` finished for one organisation (datastore/migration.py).

A persisted GraphQL document (Apollo's APQ, datastore/documents.py) belongs to the
organisation that registered it, in one of 4,096 slots named by the first three hex digits
of its SHA-256: an organisation holds at most that many, and a document whose slot another
holds replaces it. Releases before this layout kept documents under ``PQ#<sha256>``, outside
every organisation; nothing reads those any more and the table's TTL deletes them within 30
days of their last registration.

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

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from datastore.errors import Field, InvalidInput

SEP: Final = "#"

ORG: Final = "ORG"
DEPT: Final = "DEPT"
EMP: Final = "EMP"
JOB: Final = "JOB"
APP: Final = "APP"
APPLICANT: Final = "APPLICANT"
EMAIL: Final = "EMAIL"
DOMAIN: Final = "DOMAIN"
OPEN: Final = "OPEN"
AUDIT: Final = "AUDIT"
EVT: Final = "EVT"
IDEM: Final = "IDEM"
NAME: Final = "NAME"
PQ: Final = "PQ"
APIKEY: Final = "APIKEY"
MIGRATION: Final = "MIGRATION"

METADATA_SK: Final = "#METADATA"
SUBSCRIPTION_SK: Final = "#SUBSCRIPTION"
IDENTITY_SK: Final = "#IDENTITY"
DOMAIN_SK: Final = "#DOMAIN"
IDEMPOTENCY_SK: Final = "#IDEMPOTENCY"
DOCUMENT_SK: Final = "#DOCUMENT"
API_KEY_LOOKUP_SK: Final = "#APIKEY"
# begins_with on this returns exactly the organisation's own items (#METADATA, #SUBSCRIPTION).
ORG_HEADER_PREFIX: Final = "#"
ORGS_PK: Final = "ORGS"
# The table's data-layout version and the progress of migrations to it: one partition,
# outside every tenant's, read at start-up and written by ``server.py migrate``.
LAYOUT_PK: Final = "LAYOUT"
LAYOUT_VERSION_SK: Final = "#VERSION"

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


@dataclass(frozen=True, slots=True)
class Key:
    """A primary key of the table."""

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


# --- audit buckets ----------------------------------------------------------------------


def audit_bucket(at: datetime) -> str:
    """The month bucket (``yyyy-mm``, UTC) of an audit event that happened at ``at``."""
    return at.astimezone(UTC).strftime("%Y-%m")


def previous_audit_bucket(bucket: str) -> str:
    year, month = _bucket_parts(bucket)
    return f"{year - 1:04d}-12" if month == 1 else f"{year:04d}-{month - 1:02d}"


def _bucket_parts(bucket: str) -> tuple[int, int]:
    match = _AUDIT_BUCKET.fullmatch(bucket)
    if match is None or not 1 <= int(match.group(2)) <= 12:
        raise ValueError(f"{bucket!r} is not an audit bucket")
    return int(match.group(1)), int(match.group(2))


# --- partitions -------------------------------------------------------------------------


def org_pk(org_id: str) -> str:
    return _join(ORG, org_id)


def membership_pk(org_id: str, dept_id: str) -> str:
    return _join(ORG, org_id, DEPT, dept_id)


def job_partition_pk(org_id: str, job_id: str) -> str:
    return _join(ORG, org_id, JOB, job_id)


def audit_pk(org_id: str, bucket: str) -> str:
    _bucket_parts(bucket)
    return _join(ORG, org_id, AUDIT, bucket)


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


def name_pk(org_id: str, prefix: str) -> str:
    """The partition of the employees found under the folded ``prefix`` ("" for all of them)."""
    return _join(ORG, org_id, NAME, prefix)


def idempotency_pk(org_id: str, idempotency_key: str) -> str:
    return _join(ORG, org_id, IDEM, parse_idempotency_key(idempotency_key))


def identity_pk(email: str) -> str:
    return _join(EMAIL, email)


def domain_pk(domain: str) -> str:
    return _join(DOMAIN, domain)


def open_jobs_gsi_pk(org_id: str) -> str:
    return _join(ORG, org_id, OPEN)


def employees_gsi_pk(org_id: str) -> str:
    return _join(ORG, org_id, EMP)


def employee_applications_gsi_pk(org_id: str, emp_id: str) -> str:
    return _join(ORG, org_id, EMP, emp_id)


def in_tenant(partition_key: str, org_id: str) -> bool:
    """True when ``partition_key`` belongs to ``org_id``'s partition space.

    ULIDs have a fixed length, but the check does not rely on it: the tenant prefix must be
    followed by the end of the key or a separator.
    """
    own = org_pk(org_id)
    return partition_key == own or partition_key.startswith(own + SEP)


def persisted_document_pk(org_id: str, sha256: str) -> str:
    """The organisation's slot for the document of ``sha256`` (its first hex digits)."""
    if not _SHA256.fullmatch(sha256):
        raise InvalidInput("sha256", "must be 64 lowercase hexadecimal characters")
    return _join(ORG, org_id, PQ, sha256[:DOCUMENT_SLOT_DIGITS])


def api_key_lookup_pk(secret_hash: str) -> str:
    """The lookup partition of an API key, named by the SHA-256 (lowercase hex) of its secret."""
    if not _SHA256.fullmatch(secret_hash):
        raise InvalidInput("secret", "must be 64 lowercase hexadecimal characters")
    return _join(APIKEY, secret_hash)


def is_api_key_lookup_pk(partition_key: str) -> bool:
    return partition_key.startswith(APIKEY + SEP)


def is_layout_pk(partition_key: str) -> bool:
    return partition_key == LAYOUT_PK


def is_identity_pk(partition_key: str) -> bool:
    return partition_key.startswith(EMAIL + SEP)


def is_domain_pk(partition_key: str) -> bool:
    return partition_key.startswith(DOMAIN + SEP)


def org_id_of(partition_key: str) -> str | None:
    """The tenant a partition key belongs to, or None for the identity and platform keys."""
    parts = partition_key.split(SEP)
    if len(parts) >= 2 and parts[0] == ORG:
        return parts[1]
    return None


# --- item keys --------------------------------------------------------------------------


def organization_key(org_id: str) -> Key:
    return Key(org_pk(org_id), METADATA_SK)


def subscription_key(org_id: str) -> Key:
    return Key(org_pk(org_id), SUBSCRIPTION_SK)


def department_key(org_id: str, dept_id: str) -> Key:
    return Key(org_pk(org_id), _join(DEPT, dept_id))


def employee_key(org_id: str, emp_id: str) -> Key:
    return Key(org_pk(org_id), _join(EMP, emp_id))


def email_pointer_key(org_id: str, email: str) -> Key:
    return Key(org_pk(org_id), _join(EMAIL, email))


def membership_key(org_id: str, dept_id: str, emp_id: str) -> Key:
    return Key(membership_pk(org_id, dept_id), _join(EMP, emp_id))


def name_entry_key(org_id: str, prefix: str, folded_last: str, folded_first: str, emp_id: str) -> Key:
    return Key(name_pk(org_id, prefix), name_sk(folded_last, folded_first, emp_id))


def persisted_document_key(org_id: str, sha256: str) -> Key:
    return Key(persisted_document_pk(org_id, sha256), DOCUMENT_SK)


def api_key_key(org_id: str, key_id: str) -> Key:
    """The organisation's own record of one of its API keys (no secret, listed by admins)."""
    return Key(org_pk(org_id), _join(APIKEY, key_id))


def api_key_lookup_key(secret_hash: str) -> Key:
    return Key(api_key_lookup_pk(secret_hash), API_KEY_LOOKUP_SK)


def identity_key(email: str) -> Key:
    return Key(identity_pk(email), IDENTITY_SK)


def domain_key(domain: str) -> Key:
    return Key(domain_pk(domain), DOMAIN_SK)


def layout_version_key() -> Key:
    return Key(LAYOUT_PK, LAYOUT_VERSION_SK)


def migration_progress_key(version: int, org_id: str) -> Key:
    """What the migration to layout ``version`` has finished for ``org_id``."""
    return Key(LAYOUT_PK, _join(MIGRATION, f"{version:04d}", org_id))


def job_key(org_id: str, job_id: str) -> Key:
    return Key(org_pk(org_id), _join(JOB, job_id))


def application_key(org_id: str, job_id: str, app_id: str) -> Key:
    return Key(job_partition_pk(org_id, job_id), _join(APP, app_id))


def applicant_key(org_id: str, job_id: str, emp_id: str) -> Key:
    return Key(job_partition_pk(org_id, job_id), _join(APPLICANT, emp_id))


def audit_event_key(org_id: str, bucket: str, event_id: str) -> Key:
    return Key(audit_pk(org_id, bucket), _join(EVT, event_id))


def idempotency_key(org_id: str, key: str) -> Key:
    return Key(idempotency_pk(org_id, key), IDEMPOTENCY_SK)


# --- sort-key prefixes for Queries -------------------------------------------------------


def department_sk_prefix() -> str:
    return DEPT + SEP


def employee_sk_prefix() -> str:
    return EMP + SEP


def job_sk_prefix() -> str:
    return JOB + SEP


def application_sk_prefix() -> str:
    return APP + SEP


def api_key_sk_prefix() -> str:
    return APIKEY + SEP


def audit_event_sk_prefix() -> str:
    return EVT + SEP


# Below every character of a name (control characters are refused), so a shorter name sorts first.
NAME_SEP: Final = "\x01"


def name_sk(folded_last: str, folded_first: str, emp_id: str) -> str:
    return NAME_SEP.join((folded_last, folded_first, emp_id))


# --- index sort keys --------------------------------------------------------------------


def orgs_gsi_sk(name: str, org_id: str) -> str:
    return _join(name, org_id)


def employees_gsi_sk(hired_at: str, emp_id: str) -> str:
    return _join(hired_at, emp_id)


def open_jobs_gsi_sk(posted_at: str, job_id: str) -> str:
    return _join(JOB, posted_at, job_id)


def employee_applications_gsi_sk(app_id: str) -> str:
    return _join(APP, app_id)


# --- parsing ----------------------------------------------------------------------------


def id_after(prefix: str, sort_key: str) -> str:
    """The id in a sort key ``<prefix>#<id>``."""
    head, _, tail = sort_key.partition(SEP)
    if head != prefix or not tail:
        raise ValueError(f"sort key {sort_key!r} is not a {prefix} key")
    return tail


def start_key_partition(start_key: Mapping[str, str], index: str | None) -> str | None:
    """The partition a pagination start key belongs to (the index's when querying one)."""
    return start_key.get(GSI1PK if index == GSI1 else PK)
