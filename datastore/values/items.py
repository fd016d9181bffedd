"""Values in DynamoDB's wire format, for expressions and the audit trail.

Whole items are written and read by their kinds' layouts (``datastore/kinds/layout.py``); what is
left here are the single values the write functions put in condition and update
expressions (``s``, ``n``), the stored form of the time (``now``, ``timestamp``), and a
field's value as the audit trail records it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from datastore.kinds.entities import AuditValue
from datastore.kinds.model import Item, parse_timestamp, timestamp

__all__ = ["Item", "audit_attribute", "audit_value", "n", "now", "parse_timestamp", "s", "timestamp"]


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def now() -> datetime:
    # Millisecond precision, as stored, so a value read back compares equal to the one written.
    current = datetime.now(UTC)
    return current.replace(microsecond=current.microsecond // 1000 * 1000)


def audit_value(value: dict[str, Any] | None) -> AuditValue:
    """An attribute value as the audit trail records it."""
    if value is None or "NULL" in value:
        return None
    if "N" in value:
        return int(value["N"])
    if "S" in value:
        return str(value["S"])
    raise ValueError(f"no audit form for the attribute value {value!r}")


def audit_attribute(value: AuditValue) -> dict[str, Any]:
    """A field's value in the audit trail, as stored."""
    if value is None:
        return {"NULL": True}
    return n(value) if isinstance(value, int) else s(value)
