"""How long an organisation's audit trail is kept: its events' expiry, which DynamoDB's TTL acts on.

Every audit event carries ``expiresAt`` (epoch seconds, the table's TTL attribute, the one
idempotency records and persisted documents use): the time it happened plus its
organisation's retention, ``Organization.audit_retention_days``, or the platform's default
(``AUDIT_RETENTION_DAYS``, DatastoreSettings) when the organisation sets none. DynamoDB
deletes an expired event within a few days of its expiry, at no write cost; until then it is
still read (a trail a few days longer than its retention is no harm).

The write path stamps each event as it is written (datastore/writes/envelope.py), in the write's own
transaction. It learns the retention from the Table it writes through (``Table.retention``,
one ``AuditRetention`` per Table): whoever has the organisation's item already tells it
(``know``: the API's request session hands over the item its active check read), and a Table
that was told nothing reads the item once, with the first write, and remembers it for the
Table's life (a command's, a request's). So no write pays a read of its own, and no path can
stamp an event under a retention it guessed.

A change of retention applies to the events written after it; the events already written
keep their expiry (see docs/operations/data-lifecycle.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from datastore.config import DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS, MIN_RETENTION_DAYS
from datastore.errors import InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import Organization
from datastore.tenancy.keys import Key
from datastore.values.ids import OrgId
from datastore.values.items import Item


def checked_days(days: int) -> int:
    """``days`` when it lies within the bounds (MIN_RETENTION_DAYS..MAX_RETENTION_DAYS,
    datastore/config.py); InvalidInput otherwise."""
    if not MIN_RETENTION_DAYS <= days <= MAX_RETENTION_DAYS:
        raise InvalidInput(
            "audit_retention_days", f"must be {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS} days, got {days}"
        )
    return days


def expiry(occurred_at: datetime, days: int) -> datetime:
    """When an event that happened at ``occurred_at`` expires under a retention of ``days``."""
    return occurred_at + timedelta(days=days)


def days_of(organization: Organization | None, default_days: int) -> int:
    """An organisation's retention in days: its own setting, or the platform's default."""
    if organization is None or organization.audit_retention_days is None:
        return default_days
    return organization.audit_retention_days


class ItemReader(Protocol):
    """What an organisation's item is read through: the Table that holds this AuditRetention
    (datastore/table/scoped.py, which imports this module, so it is named by the one call used)."""

    async def get(self, key: Key, *, consistent: bool = False) -> Item | None: ...


class AuditRetention:
    """The retention a Table's writes stamp their audit events with: the platform's default, and
    each organisation's own as the Table learned it (module docstring)."""

    __slots__ = ("_known", "default_days")

    def __init__(self, default_days: int = DEFAULT_RETENTION_DAYS) -> None:
        self.default_days = default_days
        self._known: dict[OrgId, int] = {}

    def know(self, organization: Organization) -> None:
        """The organisation's item as its writer read it: its retention, without a read."""
        self._known[organization.org_id] = days_of(organization, self.default_days)

    async def days_for(self, table: ItemReader, org_id: OrgId) -> int:
        """The organisation's retention: as known, or read once (one GetItem) through ``table``.

        An organisation without an item (one being created) has the default.
        """
        days = self._known.get(org_id)
        if days is None:
            found = await table.get(layout.ORGANIZATION.key_at(org_id))
            organization = None if found is None else layout.ORGANIZATION.read(found)
            days = self._known[org_id] = days_of(organization, self.default_days)
        return days
