"""items: single values in DynamoDB's wire format, and a field's value as the audit trail keeps it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from datastore.values import items

WHEN = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)


def test_timestamp__utc_milliseconds_with_z() -> None:
    assert items.timestamp(WHEN) == "2024-05-06T07:08:09.123Z"
    local = WHEN.astimezone(timezone(timedelta(hours=2)))
    assert items.timestamp(local) == "2024-05-06T07:08:09.123Z"


def test_timestamp__text_order_is_time_order() -> None:
    moments = [WHEN + timedelta(milliseconds=step * 997) for step in range(50)]
    assert sorted(moments, key=items.timestamp) == moments


def test_now__round_trips_through_the_stored_form() -> None:
    moment = items.now()
    assert items.parse_timestamp(items.timestamp(moment)) == moment


def test_values__string_and_number() -> None:
    assert items.s("x") == {"S": "x"}
    assert items.n(42) == {"N": "42"}


@pytest.mark.parametrize(("value", "wire"), [(None, {"NULL": True}), (3, {"N": "3"}), ("Ops", {"S": "Ops"})])
def test_audit_values__stored_and_read_back(value: str | int | None, wire: dict[str, object]) -> None:
    assert items.audit_attribute(value) == wire
    assert items.audit_value(wire) == value


def test_audit_value__absent__none_and_other_types_refused() -> None:
    assert items.audit_value(None) is None
    with pytest.raises(ValueError, match="no audit form"):
        items.audit_value({"BOOL": True})
