"""Sign-in: which organisation and employee an email belongs to (AP4, before any tenant)."""

from __future__ import annotations

from datastore import items, keys, validation
from datastore.entities import Identity
from datastore.table import Table


def find_identity(table: Table, email: str) -> Identity | None:
    """One GetItem on the platform-wide identity item; ``table`` has the SignInScope."""
    item = table.get(keys.identity_key(validation.email(email)))
    return None if item is None else items.identity_from(item)
