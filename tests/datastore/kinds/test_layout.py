"""The table's layout: every kind declared once, written byte for byte as before, read back whole."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from datastore.kinds import layout
from datastore.kinds.entities import (
    ApplicationCounts,
    ApplicationStatus,
    Department,
    Employee,
    EmployeeStatus,
    JobStatus,
    Move,
    Role,
)
from datastore.kinds.model import Layout
from datastore.tenancy import keys
from datastore.tenants import employees
from datastore.values import ids
from tests.datastore import wire
from tests.key_guard import org_id_of

WHEN = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
ORG = "01HZX3V7Q4M2N8P5R6S7T8V9W0"
OTHER_ORG = "01HZX3V7Q4M2N8P5R6S7T8V9W1"
DEPT = "01HZX3V7Q4M2N8P5R6S7T8V9W2"
EMP = "01HZX3V7Q4M2N8P5R6S7T8V9W3"
JOB = "01HZX3V7Q4M2N8P5R6S7T8V9W4"
APP = "01HZX3V7Q4M2N8P5R6S7T8V9W5"

# --- the wire format: byte for byte what the release before the declarations wrote ----------


def test_every_kind__written_as_layout_1_was__byte_for_byte() -> None:
    """Each kind's items, the keys queries use and the idempotency fingerprints, against the
    fixture captured from the code before the kinds were declared (tests/datastore/wire.py)."""
    expected, found = wire.fixture(), wire.written()
    assert sorted(found) == sorted(expected)
    for kind in expected:
        assert found[kind] == expected[kind], kind


# Each fixture item, the kind that reads it, what the key holds that the item does not, and
# the value it must read as.
READ_BACK: list[tuple[str, Layout[Any], dict[str, Any], object]] = [
    ("organization", layout.ORGANIZATION, {}, wire.ORGANIZATION),
    ("organization_without_domains", layout.ORGANIZATION, {}, wire.ORGANIZATION_WITHOUT_DOMAINS),
    ("subscription", layout.SUBSCRIPTION, {}, wire.SUBSCRIPTION),
    ("subscription_bare", layout.SUBSCRIPTION, {}, wire.SUBSCRIPTION_BARE),
    ("domain", layout.EMAIL_DOMAIN, {}, wire.DOMAIN),
    ("department", layout.DEPARTMENT, {}, wire.DEPARTMENT),
    ("department_bare", layout.DEPARTMENT, {}, wire.DEPARTMENT_BARE),
    ("employee", layout.EMPLOYEE, {}, wire.EMPLOYEE),
    ("employee_gone", layout.EMPLOYEE, {}, wire.EMPLOYEE_GONE),
    ("membership", layout.MEMBERSHIP, {}, wire.EMPLOYEE),
    ("email_pointer", layout.EMAIL_POINTER, {"email": wire.EMPLOYEE.email}, wire.IDENTITY),
    ("identity", layout.IDENTITY, {}, wire.IDENTITY),
    ("job_draft", layout.JOB_POSTING, {}, wire.JOB_DRAFT),
    ("job_open", layout.JOB_POSTING, {}, replace(wire.JOB_OPEN, application_counts=ApplicationCounts())),
    ("job_result", layout.JOB_POSTING, {}, wire.JOB_OPEN),
    ("job_closed", layout.JOB_POSTING, {}, wire.JOB_CLOSED),
    ("application", layout.APPLICATION, {}, wire.APPLICATION),
    ("api_key", layout.API_KEY, {}, wire.API_KEY),
    ("api_key_revoked", layout.API_KEY, {}, wire.API_KEY_REVOKED),
    ("api_key_lookup", layout.API_KEY_LOOKUP, {}, wire.GRANT),
    ("api_key_lookup_revoked", layout.API_KEY_LOOKUP, {}, wire.GRANT_REVOKED),
    ("audit_event", layout.AUDIT_EVENT, {}, wire.AUDIT_EVENT),
    ("audit_event_bare", layout.AUDIT_EVENT, {}, wire.AUDIT_EVENT_BARE),
    ("move_result", layout.MOVE_RESULT, {}, Move(wire.EMPLOYEE, wire.DEPT_2)),
    ("move_result_unmoved", layout.MOVE_RESULT, {}, Move(wire.EMPLOYEE, None)),
    # A string set comes back sorted.
    (
        "migration_progress",
        layout.MIGRATION_PROGRESS,
        {"org_id": wire.ORG},
        replace(wire.PROGRESS, domains_held_elsewhere=("a.example", "b.example")),
    ),
    ("migration_progress_bare", layout.MIGRATION_PROGRESS, {"org_id": wire.ORG}, wire.PROGRESS_BARE),
]


@pytest.mark.parametrize(("name", "kind", "given", "value"), READ_BACK, ids=[case[0] for case in READ_BACK])
def test_every_kind__layout_1_items__read_back_as_written(
    name: str, kind: Layout[Any], given: dict[str, Any], value: object
) -> None:
    assert kind.read(wire.fixture()[name], **given) == value


def test_name_entries__one_per_prefix__each_the_whole_employee() -> None:
    entries = wire.fixture()["name_entries"]
    assert [layout.NAME_ENTRY.read(entry) for entry in entries] == [wire.EMPLOYEE] * len(entries)
    assert entries == employees.name_entry_items(wire.EMPLOYEE)


def test_records__read_back_with_what_their_keys_hold() -> None:
    fixture = wire.fixture()
    record = layout.IDEMPOTENCY.read(fixture["idempotency_record"], key="retry-1")
    assert (record.operation, record.fingerprint, record.created_at) == ("employee.move", "f" * 64, WHEN)
    assert layout.MOVE_RESULT.read(record.result) == Move(wire.EMPLOYEE, wire.DEPT_2)
    assert record.expires_at == (WHEN + timedelta(hours=24)).replace(microsecond=0)
    document = layout.PERSISTED_DOCUMENT.read(fixture["persisted_document"], org_id=wire.ORG)
    assert (document.sha256, document.document) == (wire.SHA256, "{ me { id } }")
    assert layout.LAYOUT_VERSION_ITEM.read(fixture["layout_version"]).version == 1


def test_applicant__written_never_read() -> None:
    with pytest.raises(TypeError, match="Applicant items are written, never read"):
        layout.APPLICANT.read(wire.fixture()["applicant"])


# --- the declarations ------------------------------------------------------------------------


def _employee(**changes: object) -> Employee:
    return replace(wire.EMPLOYEE, **changes)  # type: ignore[arg-type]  # the test's own keyword set


def test_employee__optional_attributes_none__absent_from_the_item() -> None:
    item = layout.EMPLOYEE.item(_employee(department_id=None))
    assert layout.DEPARTMENT_ID not in item and "terminatedAt" not in item
    assert item[layout.VERSION] == {"N": "3"} and item[layout.STATUS] == {"S": "active"}
    assert layout.EMPLOYEE.read(item) == _employee(department_id=None)


def test_membership__without_a_department__refused() -> None:
    with pytest.raises(ValueError, match="department_id"):
        layout.MEMBERSHIP.item(_employee(department_id=None))


def test_job__only_an_open_job_in_the_open_index_and_never_without_posted_at() -> None:
    assert keys.GSI1PK not in layout.JOB_POSTING.item(wire.JOB_DRAFT)
    assert keys.GSI1PK not in layout.JOB_POSTING.item(wire.JOB_CLOSED)
    assert layout.JOB_POSTING.item(wire.JOB_OPEN)[keys.GSI1PK] == {"S": f"ORG#{wire.ORG}#OPEN"}
    with pytest.raises(ValueError, match="posted_at"):
        layout.JOB_POSTING.item(replace(wire.JOB_OPEN, posted_at=None))


def test_versioned_kinds__declare_their_version_attribute() -> None:
    assert layout.EMPLOYEE.version == layout.VERSION
    assert layout.JOB_POSTING.version == layout.VERSION
    assert layout.MEMBERSHIP.version is None


def test_counted_field__left_out_of_the_item_unless_asked() -> None:
    job = replace(wire.JOB_DRAFT, application_counts=ApplicationCounts(applied=2, withdrawn=1))
    item = layout.JOB_POSTING.item(job)
    assert not set(layout.APPLICATION_COUNTS.values()) & set(item)
    assert layout.APPLICATION_COUNTS_LABEL not in item and layout.COUNTS_REVISION not in item
    assert layout.JOB_POSTING.read(item).application_counts == ApplicationCounts()
    with_counters = layout.JOB_POSTING.item_with_counters(job)
    assert layout.JOB_POSTING.read(with_counters).application_counts == job.application_counts


def test_counted_field__counters_present_or_absent__read_with_absent_as_zero() -> None:
    item = layout.JOB_POSTING.item(wire.JOB_DRAFT)
    item[layout.APPLICATION_COUNTS[ApplicationStatus.REVIEWING]] = {"N": "4"}
    item[layout.APPLICATION_COUNTS[ApplicationStatus.ACCEPTED]] = {"N": "1"}
    assert layout.JOB_POSTING.read(item).application_counts == ApplicationCounts(reviewing=4, accepted=1)


def test_read__extra_attributes__ignored() -> None:
    dept = Department(ids.new_id(), ids.new_id(), "Ops", None, 4)  # type: ignore[arg-type]
    assert layout.DEPARTMENT.read({**layout.DEPARTMENT.item(dept), "other": {"S": "x"}}) == dept


def test_read__unknown_enum_value__raises() -> None:
    item = layout.EMPLOYEE.item(_employee(role=Role.MANAGER))
    item[layout.ROLE] = {"S": "overlord"}
    with pytest.raises(KeyError):
        layout.EMPLOYEE.read(item)


def test_name_entry__sort_key_orders_by_folded_last_then_first_name() -> None:
    def sort_key(first: str, last: str) -> str:
        return layout.NAME_ENTRY.key_of(_employee(first_name=first, last_name=last), prefix="").sk

    ordered = [sort_key("Zoë", "Ng"), sort_key("Ann", "Ng Li"), sort_key("Ann", "Nga")]
    assert sorted(ordered) == ordered
    assert sort_key("Bo", "Lee") > sort_key("Ann", "Lee")
    assert sort_key("Zoë", "Ng").startswith("ng\x01zoe\x01")


def test_every_tenant_kind__partition_in_the_organisations_space() -> None:
    tenant_kinds = [
        layout.ORGANIZATION.key_of(wire.ORGANIZATION),
        layout.SUBSCRIPTION.key_of(wire.SUBSCRIPTION),
        layout.DEPARTMENT.key_of(wire.DEPARTMENT),
        layout.EMPLOYEE.key_of(wire.EMPLOYEE),
        layout.MEMBERSHIP.key_of(wire.EMPLOYEE),
        layout.NAME_ENTRY.key_of(wire.EMPLOYEE, prefix="ng"),
        layout.EMAIL_POINTER.key_of(wire.IDENTITY),
        layout.JOB_POSTING.key_of(wire.JOB_OPEN),
        layout.APPLICATION.key_of(wire.APPLICATION),
        layout.APPLICANT.key_of(wire.APPLICATION),
        layout.API_KEY.key_of(wire.API_KEY),
        layout.AUDIT_EVENT.key_of(wire.AUDIT_EVENT),
        layout.IDEMPOTENCY.key_at(wire.ORG, "k"),
        layout.PERSISTED_DOCUMENT.key_at(wire.ORG, wire.SHA256),
    ]
    assert all(keys.in_tenant(key.pk, wire.ORG) and org_id_of(key.pk) == wire.ORG for key in tenant_kinds)
    assert keys.is_identity_pk(layout.IDENTITY.key_of(wire.IDENTITY).pk)
    assert keys.is_domain_pk(layout.EMAIL_DOMAIN.key_of(wire.DOMAIN).pk)
    assert keys.is_api_key_lookup_pk(layout.API_KEY_LOOKUP.key_at(wire.SHA256).pk)
    assert keys.is_layout_pk(layout.LAYOUT_VERSION_ITEM.key_at().pk)
    assert keys.is_layout_pk(layout.MIGRATION_PROGRESS.key_at(1, wire.ORG).pk)


def test_open_jobs_index__sort_key_is_posting_time_order() -> None:
    earlier = layout.JOB_POSTING.item(replace(wire.JOB_OPEN, job_id="01ZZZZZZZZZZZZZZZZZZZZZZZZ"))  # type: ignore[arg-type]
    later = layout.JOB_POSTING.item(
        replace(wire.JOB_OPEN, job_id="01000000000000000000000000", posted_at=WHEN + timedelta(milliseconds=1))  # type: ignore[arg-type]
    )
    assert earlier[keys.GSI1SK]["S"] < later[keys.GSI1SK]["S"]


def test_employee_status__inactive_round_trips() -> None:
    emp = _employee(status=EmployeeStatus.INACTIVE, terminated_at=WHEN, department_id=None)
    assert layout.EMPLOYEE.read(layout.EMPLOYEE.item(emp)) == emp
    assert layout.JOB_POSTING.read(layout.JOB_POSTING.item(wire.JOB_CLOSED)).status is JobStatus.CLOSED


# --- keys -------------------------------------------------------------------------------------


def test_tenant_keys__every_partition_starts_with_the_org() -> None:
    tenant_keys = [
        layout.ORGANIZATION.key_at(ORG),
        layout.SUBSCRIPTION.key_at(ORG),
        layout.DEPARTMENT.key_at(ORG, DEPT),
        layout.EMPLOYEE.key_at(ORG, EMP),
        layout.EMAIL_POINTER.key_at(ORG, "a@example.com"),
        layout.MEMBERSHIP.key_at(ORG, DEPT, EMP),
        layout.JOB_POSTING.key_at(ORG, JOB),
        layout.APPLICATION.key_at(ORG, JOB, APP),
        layout.APPLICANT.key_at(ORG, JOB, EMP),
        layout.NAME_ENTRY.key_at(ORG, "", "lee", "ann", EMP),
        layout.NAME_ENTRY.key_at(ORG, "le", "lee", "ann", EMP),
    ]
    index_partitions = [
        layout.JOB_POSTING.index_partition(ORG),
        layout.EMPLOYEE.index_partition(ORG),
        layout.APPLICATION.index_partition(ORG, EMP),
    ]
    for partition in [key.pk for key in tenant_keys] + index_partitions:
        assert partition.startswith(f"ORG#{ORG}")
        assert keys.in_tenant(partition, ORG)
        assert not keys.in_tenant(partition, OTHER_ORG)
        assert org_id_of(partition) == ORG


def test_layout__matches_the_documented_keys() -> None:
    assert layout.ORGANIZATION.key_at(ORG) == keys.Key(f"ORG#{ORG}", "#METADATA")
    assert layout.SUBSCRIPTION.key_at(ORG) == keys.Key(f"ORG#{ORG}", "#SUBSCRIPTION")
    assert layout.DEPARTMENT.key_at(ORG, DEPT) == keys.Key(f"ORG#{ORG}", f"DEPT#{DEPT}")
    assert layout.EMPLOYEE.key_at(ORG, EMP) == keys.Key(f"ORG#{ORG}", f"EMP#{EMP}")
    assert layout.MEMBERSHIP.key_at(ORG, DEPT, EMP) == keys.Key(f"ORG#{ORG}#DEPT#{DEPT}", f"EMP#{EMP}")
    assert layout.IDENTITY.key_at("a@example.com") == keys.Key("EMAIL#a@example.com", "#IDENTITY")
    assert layout.JOB_POSTING.key_at(ORG, JOB) == keys.Key(f"ORG#{ORG}", f"JOB#{JOB}")
    assert layout.APPLICATION.key_at(ORG, JOB, APP) == keys.Key(f"ORG#{ORG}#JOB#{JOB}", f"APP#{APP}")
    assert layout.JOB_POSTING.index_partition(ORG) == f"ORG#{ORG}#OPEN"
    assert layout.NAME_ENTRY.key_at(ORG, "an", "Lee", "Ann", EMP) == keys.Key(
        f"ORG#{ORG}#NAME#an", f"lee\x01ann\x01{EMP}"
    )
    assert layout.NAME_ENTRY.partition(ORG, "") == f"ORG#{ORG}#NAME#"


def test_org_header_prefix__matches_only_the_organisation_items() -> None:
    prefix = keys.ORG_HEADER_PREFIX
    assert layout.ORGANIZATION.key_at(ORG).sk.startswith(prefix)
    assert layout.SUBSCRIPTION.key_at(ORG).sk.startswith(prefix)
    others = [
        layout.DEPARTMENT.key_at(ORG, DEPT),
        layout.EMPLOYEE.key_at(ORG, EMP),
        layout.EMAIL_POINTER.key_at(ORG, "a@example.com"),
        layout.JOB_POSTING.key_at(ORG, JOB),
    ]
    assert not any(key.sk.startswith(prefix) for key in others)


def test_sort_key_prefixes__match_their_entities_only() -> None:
    assert layout.DEPARTMENT.key_at(ORG, DEPT).sk.startswith(layout.DEPARTMENT.sort_prefix)
    assert layout.EMPLOYEE.key_at(ORG, EMP).sk.startswith(layout.MEMBERSHIP.sort_prefix)
    assert layout.JOB_POSTING.key_at(ORG, JOB).sk.startswith(layout.JOB_POSTING.sort_prefix)
    assert layout.APPLICATION.key_at(ORG, JOB, APP).sk.startswith(layout.APPLICATION.sort_prefix)
    # The applicant marker shares the job partition but not the application prefix.
    assert not layout.APPLICANT.key_at(ORG, JOB, EMP).sk.startswith(layout.APPLICATION.sort_prefix)
    # The email pointer shares the org partition but not the employee prefix.
    assert not layout.EMAIL_POINTER.key_at(ORG, "e@example.com").sk.startswith(layout.MEMBERSHIP.sort_prefix)
