"""Persisted GraphQL documents (Apollo's automatic persisted queries), one store per organisation.

A document belongs to the organisation whose caller registered it: it lives in that
organisation's own partitions (``ORG#<org>#PQ#<slot>``, layout.py), read and written through
its TenantScope, so one organisation can neither run nor tell that another registered a
text. Every server process sees a document one of them registered.

Bounded three ways. A document is at most MAX_DOCUMENT_BYTES of UTF-8. An organisation holds
at most ``16 ** keys.DOCUMENT_SLOT_DIGITS`` (4,096) of them, one per slot named by the first
hex digits of the SHA-256: a document whose slot another holds replaces it, and the one
replaced is simply registered again when next sent (its hash is checked on every read, so
a slot never answers for another document). Each put pushes the item's expiry (the table's
TTL attribute) DOCUMENT_TTL ahead, so documents no client registers any more are removed by
DynamoDB itself. At most 4,096 x 16 KiB = 64 MiB per organisation, then.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from datastore import keys, layout, transact
from datastore.errors import InvalidInput
from datastore.ids import OrgId
from datastore.records import PersistedDocument
from datastore.table import Table

# A document not registered again within this long is deleted by the table's TTL; a client
# that sends its hash afterwards gets PERSISTED_QUERY_NOT_FOUND and registers it again.
DOCUMENT_TTL: Final = timedelta(days=30)
# The largest document stored, in UTF-8 bytes. The bench's largest query (Q6: 411 tokens)
# prints to 3.8 kB as Apollo Client sends it (indented, one field a line), so a document at
# the token limit (1,000) prints to about 9 kB; GraphiQL's full introspection query is 1.6 kB.
MAX_DOCUMENT_BYTES: Final = 16 * 1024


def fits(document: str) -> bool:
    """Whether ``document`` is small enough to be stored."""
    return len(document) <= MAX_DOCUMENT_BYTES and len(document.encode()) <= MAX_DOCUMENT_BYTES


def _checked(sha256: str) -> str:
    if not keys.is_sha256(sha256):
        raise InvalidInput("sha256", "must be 64 lowercase hexadecimal characters")
    return sha256


def get_document(table: Table, org_id: OrgId, sha256: str) -> str | None:
    """The organisation's document registered under ``sha256`` (one GetItem), or None."""
    item = table.get(layout.PERSISTED_DOCUMENT.key_at(org_id, _checked(sha256)))
    if item is None:
        return None
    found = layout.PERSISTED_DOCUMENT.read(item, org_id=org_id)
    return found.document if found.sha256 == sha256 else None  # the slot may hold another document


def put_document(table: Table, org_id: OrgId, sha256: str, document: str, at: datetime) -> None:
    """Register ``document`` under its hash for the organisation (the caller checked the hash)."""
    if not fits(document):
        raise InvalidInput("document", f"a persisted document is at most {MAX_DOCUMENT_BYTES} bytes")
    stored = PersistedDocument(org_id, _checked(sha256), document, at + DOCUMENT_TTL)
    table.write([transact.put(layout.PERSISTED_DOCUMENT.item(stored))])
