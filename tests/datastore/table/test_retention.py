"""Audit retention: each event's expiry is when it happened plus its organisation's retention."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.aws import calls
from datastore.config import DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS, MIN_RETENTION_DAYS
from datastore.errors import InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import AuditEvent, Employee, EmployeeStatus, Role
from datastore.lifecycle import erasure
from datastore.table.pagination import PageRequest
from datastore.table.retention import AuditRetention
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import TenantScope
from datastore.tenants import departments, employees, onboarding, organizations
from datastore.tenants.onboarding import Row
from datastore.values import ids, items
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.support import raw_get


def events(table: Table) -> list[AuditEvent]:
    """The organisation's trail, newest first."""
    return list(run(audit.list_audit_events(table, PageRequest(first=100))).items)


def expiry_of(event: AuditEvent, days: int) -> datetime:
    """The stored expiry: whole epoch seconds of when it happened plus ``days``."""
    return datetime.fromtimestamp(int((event.occurred_at + timedelta(days=days)).timestamp()), UTC)


def stored_expires_at(client: DynamoDBClient, table: Table, event: AuditEvent) -> int:
    item = raw_get(client, table.name, layout.AUDIT_EVENT.key_of(event))
    assert item is not None
    return int(item[layout.EXPIRES_AT]["N"])


def fresh(tenant: Tenant, default_days: int = DEFAULT_RETENTION_DAYS) -> Table:
    """The tenant's table as a new command or request gets it: it knows no retention yet."""
    table = tenant.table
    return Table(table.dynamo, table.name, table.scope, retention=AuditRetention(default_days))


def test_write__organisation_sets_none__event_expires_after_the_default(tenant: Tenant, client: DynamoDBClient) -> None:
    run(
        employees.create_employee(
            fresh(tenant),
            email=tenant.email("a"),
            first_name="A",
            last_name="B",
            department_id=None,
            role=Role.EMPLOYEE,
        )
    )
    newest = events(tenant.table)[0]
    assert newest.action == "employee.create"
    assert newest.expires_at == expiry_of(newest, DEFAULT_RETENTION_DAYS)
    assert stored_expires_at(client, tenant.table, newest) == int(newest.expires_at.timestamp())
    # The organisation's creation too, written through the operator's (provisioning) table.
    oldest = events(tenant.table)[-1]
    assert oldest.action == "organization.create" and oldest.expires_at == expiry_of(oldest, DEFAULT_RETENTION_DAYS)


def test_write__platform_default_set__event_expires_after_it(tenant: Tenant) -> None:
    run(departments.create_department(fresh(tenant, default_days=400), name="Ops"))
    newest = events(tenant.table)[0]
    assert newest.expires_at == expiry_of(newest, 400)


def test_set_audit_retention__later_events_expire_after_it__earlier_ones_keep_theirs(
    tenant: Tenant, client: DynamoDBClient
) -> None:
    table = fresh(tenant)
    run(departments.create_department(table, name="Before"))
    before = events(tenant.table)[0]

    updated = run(organizations.set_audit_retention(table, 400))
    assert updated.audit_retention_days == 400
    run(departments.create_department(table, name="After"))  # the same Table: it was told
    run(departments.create_department(fresh(tenant), name="Later"))  # a new one reads it

    later, after, change, *_ = events(tenant.table)
    assert change.action == "organization.setAuditRetention"
    assert [c.field for c in change.changes] == [layout.AUDIT_RETENTION_DAYS]
    assert change.expires_at == expiry_of(change, DEFAULT_RETENTION_DAYS)  # kept under the one it replaced
    assert after.expires_at == expiry_of(after, 400) and later.expires_at == expiry_of(later, 400)
    assert events(tenant.table)[3].event_id == before.event_id
    assert stored_expires_at(client, tenant.table, before) == int(expiry_of(before, DEFAULT_RETENTION_DAYS).timestamp())

    back = run(organizations.set_audit_retention(table, None))
    assert back.audit_retention_days is None
    item = raw_get(client, tenant.table.name, layout.ORGANIZATION.key_at(tenant.org_id))
    assert item is not None and layout.AUDIT_RETENTION_DAYS not in item
    run(departments.create_department(fresh(tenant), name="Default again"))
    assert events(tenant.table)[0].expires_at == expiry_of(events(tenant.table)[0], DEFAULT_RETENTION_DAYS)


def test_set_audit_retention__same_value__writes_nothing(tenant: Tenant) -> None:
    run(organizations.set_audit_retention(tenant.table, 500))
    with calls.listening() as log:
        run(organizations.set_audit_retention(tenant.table, 500))
    assert log.operations() == ["GetItem"]


@pytest.mark.parametrize("days", [MIN_RETENTION_DAYS - 1, MAX_RETENTION_DAYS + 1, 0, -5])
def test_set_audit_retention__out_of_bounds__invalid_naming_the_field_and_nothing_written(
    tenant: Tenant, days: int
) -> None:
    with calls.listening() as log, pytest.raises(InvalidInput) as refused:
        run(organizations.set_audit_retention(tenant.table, days))
    assert refused.value.field == "audit_retention_days"
    assert f"{MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}" in refused.value.reason
    assert log.operations() == []


@pytest.mark.parametrize("days", [MIN_RETENTION_DAYS, MAX_RETENTION_DAYS])
def test_set_audit_retention__bounds__accepted(tenant: Tenant, days: int) -> None:
    assert run(organizations.set_audit_retention(tenant.table, days)).audit_retention_days == days


def test_table_told_the_organisation__writes_read_nothing_more(tenant: Tenant) -> None:
    run(organizations.set_audit_retention(tenant.table, 300))
    table = fresh(tenant)
    organization = run(organizations.get_organization(table))
    assert organization is not None
    table.retention.know(organization)  # what the request session does with its active check's read

    with calls.listening() as log:
        tenant_hire(table, tenant, "told")
    assert "GetItem" not in log.operations() and log.count("TransactWriteItems") == 1
    assert events(tenant.table)[0].expires_at == expiry_of(events(tenant.table)[0], 300)


def test_table_told_nothing__reads_the_organisation_once_for_all_its_writes(tenant: Tenant) -> None:
    run(organizations.set_audit_retention(tenant.table, 300))
    table = fresh(tenant)
    org_key = layout.ORGANIZATION.key_at(tenant.org_id)

    with calls.listening() as log:
        for n in range(3):
            tenant_hire(table, tenant, f"n{n}")
    org_reads = [c for c in log.snapshot() if c.operation == "GetItem" and c.params["Key"] == org_key.wire()]
    assert len(org_reads) == 1
    assert all(e.expires_at == expiry_of(e, 300) for e in events(tenant.table)[:3])


def test_bulk_import__each_rows_event_expires_after_the_organisations_retention(tenant: Tenant) -> None:
    run(organizations.set_audit_retention(tenant.table, 1000))
    table = fresh(tenant)
    rows = [Row(tenant.email(f"imp{n}"), "Imp", f"Row {n}") for n in range(3)]
    known = run(onboarding.existing(table, [row.email for row in rows]))
    for row in rows:
        run(onboarding.import_row(table, row, known.get(row.email)))
    created = [e for e in events(tenant.table) if e.action == "employee.create"]
    assert len(created) == 3 and all(e.expires_at == expiry_of(e, 1000) for e in created)


def test_erasure__events_keep_their_expiry(tenant: Tenant) -> None:
    run(organizations.set_audit_retention(tenant.table, 700))
    person = tenant_hire(tenant.table, tenant, "gone")
    run(employees.terminate_employee(tenant.table, person.emp_id))
    about = {e.event_id: e.expires_at for e in events(tenant.table) if e.entity_id == person.emp_id}
    assert len(about) == 2 and all(at is not None for at in about.values())

    run(erasure.erase_person(tenant.table, person.emp_id))

    after = {e.event_id: e for e in events(tenant.table) if e.event_id in about}
    # Its creation named them (email, names): redacted; its termination named nothing personal.
    assert [e.action for e in after.values() if e.erased_at is not None] == ["employee.create"]
    assert {event_id: e.expires_at for event_id, e in after.items()} == about


def test_organisation_item__retention_round_trips_through_its_layout(tenant: Tenant) -> None:
    updated = run(organizations.set_audit_retention(tenant.table, 1234))
    item = layout.ORGANIZATION.item(updated)
    assert item[layout.AUDIT_RETENTION_DAYS] == items.n(1234)
    assert layout.ORGANIZATION.read(item) == updated
    assert keys.in_tenant(item[keys.PK]["S"], tenant.org_id)


def test_audit_retention__unknown_organisation__the_default(tenant: Tenant) -> None:
    # An organisation being created has no item yet: its creation's event gets the default.
    org_id = ids.OrgId(ids.new_id())
    assert run(AuditRetention(321).days_for(tenant.table.with_scope(TenantScope(org_id)), org_id)) == 321


def tenant_hire(table: Table, tenant: Tenant, local: str) -> Employee:
    hired = run(
        employees.create_employee(
            table, email=tenant.email(local), first_name="Hi", last_name="Red", department_id=None, role=Role.EMPLOYEE
        )
    )
    assert hired.status is EmployeeStatus.ACTIVE
    return hired
