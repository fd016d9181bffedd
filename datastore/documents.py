"""Persisted GraphQL documents (Apollo's automatic persisted queries), shared by every process.

A document is stored under its SHA-256, so every server process sees a document one of them
registered, and registering the same document twice writes the same item. Documents are
public query text, not tenant data: they live in their own partitions (``PQ#<sha256>``) under
the DocumentScope. Each put pushes the item's expiry (the table's TTL attribute) forward, so
documents no client registers any more are removed by DynamoDB itself.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from datastore import keys, transact
from datastore.items import EXPIRES_AT, n, s
from datastore.table import Table

# A document not registered again within this long is deleted by the table's TTL; a client
# that sends its hash afterwards gets PERSISTED_QUERY_NOT_FOUND and registers it again.
DOCUMENT_TTL: Final = timedelta(days=30)
ENTITY: Final = "PersistedDocument"
_DOCUMENT: Final = "document"


def get_document(table: Table, sha256: str) -> str | None:
    """The document registered under ``sha256`` (one GetItem), or None."""
    item = table.get(keys.persisted_document_key(sha256))
    if item is None:
        return None
    document: str = item[_DOCUMENT]["S"]
    return document


def put_document(table: Table, sha256: str, document: str, at: datetime) -> None:
    """Register ``document`` under its hash (the caller has checked that it is its hash)."""
    key = keys.persisted_document_key(sha256)
    item = {
        **key.wire(),
        "entity": s(ENTITY),
        _DOCUMENT: s(document),
        EXPIRES_AT: n(int((at + DOCUMENT_TTL).timestamp())),
    }
    table.write([transact.put(item)])
