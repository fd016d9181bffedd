"""Entity layouts: declared once, read and written by the functions compiled from them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from datastore import ids, layout
from datastore.entities import (
    ApplicationCounts,
    ApplicationStatus,
    Department,
    Employee,
    EmployeeStatus,
    JobPosting,
    JobStatus,
    Role,
)
from tests.datastore import wire

WHEN = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)


def _employee(**changes: object) -> Employee:
    values: dict[str, object] = {
        "org_id": ids.new_id(),
        "emp_id": ids.new_id(),
        "email": "e@example.com",
        "first_name": "Erin",
        "last_name": "Evans",
        "department_id": None,
        "role": Role.MANAGER,
        "status": EmployeeStatus.ACTIVE,
        "hired_at": WHEN,
        "terminated_at": None,
        "version": 3,
    }
    values.update(changes)
    return Employee(**values)  # type: ignore[arg-type]  # the test's own keyword set


def test_employee__optional_attributes_none__absent_from_the_item_and_read_back_as_none() -> None:
    emp = _employee()
    item = layout.EMPLOYEE.write(emp)
    assert layout.DEPARTMENT_ID not in item and "terminatedAt" not in item
    assert item[layout.VERSION] == {"N": "3"}
    assert item[layout.STATUS] == {"S": "active"}
    assert item["hiredAt"] == {"S": "2024-05-06T07:08:09.123Z"}
    assert layout.EMPLOYEE.read(item) == emp


def test_employee__every_attribute_set__round_trips() -> None:
    emp = _employee(department_id=ids.new_id(), status=EmployeeStatus.INACTIVE, terminated_at=WHEN)
    assert layout.EMPLOYEE.read(layout.EMPLOYEE.write(emp)) == emp


def test_read__extra_attributes__ignored() -> None:
    dept = Department(ids.new_id(), ids.new_id(), "Ops", None, 4)
    item = {**layout.DEPARTMENT.write(dept), "PK": {"S": "x"}, "entity": {"S": "Department"}}
    assert layout.DEPARTMENT.read(item) == dept


def test_read__unknown_enum_value__raises() -> None:
    item = layout.EMPLOYEE.write(_employee())
    item["role"] = {"S": "overlord"}
    with pytest.raises(KeyError):
        layout.EMPLOYEE.read(item)


def test_versioned_layouts__declare_their_version_attribute() -> None:
    assert layout.EMPLOYEE.version == layout.VERSION
    assert layout.JOB_POSTING.version == layout.VERSION
    job = JobPosting(ids.new_id(), ids.new_id(), ids.new_id(), "T", "", JobStatus.DRAFT, None, None, 1)
    assert layout.JOB_POSTING.write(job)[layout.VERSION] == {"N": "1"}


@dataclass(frozen=True)
class _Thing:
    name: str
    version: int


def test_declaration__attribute_twice__refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        layout.Layout(_Thing, (layout.s("name", "name"), layout.s("name", "name")))


def test_declaration__version_not_an_attribute__refused() -> None:
    with pytest.raises(ValueError, match="version"):
        layout.Layout(_Thing, (layout.s("name", "name"),), version="version")


def _job() -> JobPosting:
    return JobPosting(
        org_id=ids.new_id(),
        job_id=ids.new_id(),
        department_id=ids.new_id(),
        title="Welder",
        description="",
        status=JobStatus.DRAFT,
        posted_at=None,
        closed_at=None,
        version=3,
        application_counts=ApplicationCounts(applied=2, withdrawn=1),
    )


def test_counted_field__written__left_out_of_the_item() -> None:
    item = layout.JOB_POSTING.write(_job())

    assert not set(layout.APPLICATION_COUNTS.values()) & set(item)
    assert "applicationCounts" not in item and layout.COUNTS_REVISION not in item


def test_counted_field__counters_present_or_absent__read_with_absent_as_zero() -> None:
    item = layout.JOB_POSTING.write(_job())

    assert layout.JOB_POSTING.read(item).application_counts == ApplicationCounts()
    item[layout.APPLICATION_COUNTS[ApplicationStatus.REVIEWING]] = {"N": "4"}
    item[layout.APPLICATION_COUNTS[ApplicationStatus.ACCEPTED]] = {"N": "1"}
    assert layout.JOB_POSTING.read(item).application_counts == ApplicationCounts(reviewing=4, accepted=1)


# --- the wire format: byte for byte what the release before the declarations wrote ----------


def test_every_kind__written_as_layout_1_was__byte_for_byte() -> None:
    """Each kind's items, the keys queries use and the idempotency fingerprints, against the
    fixture captured from the code before the kinds were declared (tests/datastore/wire.py)."""
    expected, found = wire.fixture(), wire.written()
    assert sorted(found) == sorted(expected)
    for kind in expected:
        assert found[kind] == expected[kind], kind
