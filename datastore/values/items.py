"""Values in DynamoDB's wire format, for expressions and the audit trail.

Whole items are written and read by their kinds' layouts (``datastore/kinds/layout.py``); what is
left here is what an item is (``Item``), the single values the write functions put in
condition and update expressions (``s``, ``n``), the stored form of the time (``now``,
``timestamp``), and a field's value as the audit trail records it (``AuditValue``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Item = dict[str, Any]
"""An item in DynamoDB's wire format: ``{"name": {"S": "Acme"}}``."""

AuditValue = str | int | None
"""A field's value in the audit trail: text, a number, or absent."""


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def timestamp(value: datetime) -> str:
    """ISO-8601 in UTC with milliseconds: sorts as text in time order."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value)


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
