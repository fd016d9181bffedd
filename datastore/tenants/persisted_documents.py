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

When a document was last put is its expiry less DOCUMENT_TTL (``registered_at``): the server
puts a document again when a client runs it by hash on a later day than its last put
(graphql_api/http/persisted.py), so that date is also when a client last ran it, to the day,
and a document in use never expires. ``schema-check`` reads it to say which documents clients
still send (``list_documents``). Nothing new is stored for it: items written before keep
their shape and mean the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Final

from datastore.errors import InvalidInput
from datastore.kinds import layout
from datastore.kinds.bookkeeping import PersistedDocument
from datastore.table import transact
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values.ids import OrgId

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


async def get_document(table: Table, org_id: OrgId, sha256: str) -> str | None:
    """The organisation's document registered under ``sha256`` (one GetItem), or None."""
    found = await find_document(table, org_id, sha256)
    return None if found is None else found.document


async def find_document(table: Table, org_id: OrgId, sha256: str) -> PersistedDocument | None:
    """The organisation's stored document of ``sha256`` with its expiry (one GetItem), or None."""
    item = await table.get(layout.PERSISTED_DOCUMENT.key_at(org_id, _checked(sha256)))
    if item is None:
        return None
    found = layout.PERSISTED_DOCUMENT.read(item, org_id=org_id)
    return found if found.sha256 == sha256 else None  # the slot may hold another document


def registered_at(document: PersistedDocument) -> datetime:
    """When ``document`` was last put: by a client registering it, or running it on a new day."""
    return document.expires_at - DOCUMENT_TTL


async def list_documents(table: Table, org_id: OrgId) -> AsyncIterator[PersistedDocument]:
    """Every document the organisation holds: one read of each slot's key (BatchGetItem, 100
    keys a call, 41 calls). An item whose TTL has passed but DynamoDB has not yet removed is
    left out, as a client would no longer find it."""
    slots = [f"{slot:0{keys.DOCUMENT_SLOT_DIGITS}x}".ljust(64, "0") for slot in range(16**keys.DOCUMENT_SLOT_DIGITS)]
    wanted = [layout.PERSISTED_DOCUMENT.key_at(org_id, slot) for slot in slots]
    now = datetime.now(UTC)
    for item in await table.batch_get(wanted):
        if item is not None:
            found = layout.PERSISTED_DOCUMENT.read(item, org_id=org_id)
            if found.expires_at > now:
                yield found


async def put_document(table: Table, org_id: OrgId, sha256: str, document: str, at: datetime) -> None:
    """Register ``document`` under its hash for the organisation (the caller checked the hash)."""
    if not fits(document):
        raise InvalidInput("document", f"a persisted document is at most {MAX_DOCUMENT_BYTES} bytes")
    stored = PersistedDocument(org_id, _checked(sha256), document, at + DOCUMENT_TTL)
    await table.write([transact.put(layout.PERSISTED_DOCUMENT.item(stored))])
