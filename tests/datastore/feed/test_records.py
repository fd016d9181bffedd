"""Stream records of real writes, decoded through the item layouts into typed change events."""

from __future__ import annotations

from typing import Any

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.feed import records
from datastore.feed.reader import StreamReader
from datastore.feed.records import ChangeEvent, ChangeName, StreamRecord, Undecodable
from datastore.kinds import layout
from datastore.kinds.entities import AuditEvent, Employee, Identity, Organization, Role
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenants import employees
from tests.blocking import run
from tests.datastore.feed.conftest import new_organization


def read_all(reader: StreamReader) -> list[StreamRecord]:
    found: list[StreamRecord] = []
    while batch := run(reader.poll()):
        found += batch
    return found


def events_of(found: list[StreamRecord], kind: str) -> list[ChangeEvent]:
    return [records.decode(record) for record in found if record.kind == kind]


def test_decode__employee_created_then_updated__typed_old_and_new_with_the_key_s_organisation(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    reader = StreamReader(streams, client, own_table.name)
    run(reader.start())  # at LATEST: what follows is read
    org, tenant = new_organization(own_table)
    hired = run(
        employees.create_employee(
            tenant,
            email=f"ann@{org.email_domains[0]}",
            first_name="Ann",
            last_name="Lee",
            department_id=None,
            role=Role.EMPLOYEE,
        )
    )
    promoted = run(employees.update_employee(tenant, hired.emp_id, expected_version=hired.version, role=Role.MANAGER))

    found = read_all(reader)

    created, updated = [e for e in events_of(found, "Employee") if e.key == layout.EMPLOYEE.key_of(hired)]
    assert (created.name, created.org_id, created.old, created.new) == (ChangeName.INSERT, org.org_id, None, hired)
    assert isinstance(updated.new, Employee) and isinstance(updated.old, Employee)
    assert (updated.name, updated.old, updated.new) == (ChangeName.MODIFY, hired, promoted)
    assert updated.changed == ("role", "version")
    assert all(record.org_id == org.org_id for record in found if keys.org_id_of(record.partition_key))
    # Every write's audit event is in the stream with it, typed.
    audit = [e.new for e in events_of(found, "AuditEvent")]
    assert [event.action for event in audit if isinstance(event, AuditEvent)] == [
        "organization.create",
        "employee.create",
        "employee.update",
    ]
    [organization] = events_of(found, "Organization")
    assert isinstance(organization.new, Organization) and organization.new.org_id == org.org_id


def test_decode__kind_keeping_a_field_in_its_key_only__read_back_from_the_key(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    reader = StreamReader(streams, client, own_table.name)
    run(reader.start())
    org, _tenant = new_organization(own_table)

    found = read_all(reader)

    email = f"admin@{org.email_domains[0]}"
    [pointer] = events_of(found, "EmailPointer")
    [identity] = events_of(found, "Identity")
    assert isinstance(pointer.new, Identity) and pointer.new == Identity(email, org.org_id, pointer.new.emp_id)
    assert pointer.org_id == org.org_id
    # The platform-wide identity item belongs to no organisation's partitions, whatever it names.
    assert identity.new == pointer.new and identity.org_id is None


def test_stream_record__encoded_for_the_fanout__decodes_to_the_same_record(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    reader = StreamReader(streams, client, own_table.name)
    run(reader.start())
    new_organization(own_table)

    found = read_all(reader)

    assert found and all(StreamRecord.decode(record.encode()) == record for record in found)
    assert {record.kind for record in found} >= {"Organization", "Employee", "AuditEvent", "Identity"}
    assert all(record.sequence_number and record.shard_id for record in found)


def test_decode__kind_no_layout_declares__undecodable() -> None:
    record = StreamRecord(
        ChangeName.INSERT,
        {keys.PK: {"S": "ORG#X"}, keys.SK: {"S": "WHAT#1"}},
        None,
        {keys.PK: {"S": "ORG#X"}, keys.SK: {"S": "WHAT#1"}, "entity": {"S": "Nonesuch"}},
        "shard",
        "1",
        records.datetime.now(records.UTC),
    )
    assert record.kind == "Nonesuch" and record.org_id == "X"
    with pytest.raises(Undecodable):
        records.decode(record)


def test_decode__image_its_layout_cannot_read__undecodable() -> None:
    item = {keys.PK: {"S": "ORG#X"}, keys.SK: {"S": "EMP#1"}, "entity": {"S": "Employee"}}  # no attributes
    record = StreamRecord(ChangeName.REMOVE, item, item, None, "shard", "1", records.datetime.now(records.UTC))
    with pytest.raises(Undecodable):
        records.decode(record)
