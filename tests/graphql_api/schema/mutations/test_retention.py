"""setAuditRetention over HTTP, and the expiry every mutation's audit event carries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.aws import calls
from datastore.config import DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS, MIN_RETENTION_DAYS
from datastore.kinds import layout
from datastore.kinds.entities import AuditEvent, Role
from datastore.table.pagination import PageRequest
from datastore.tenants import organizations
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.support import raw_get
from tests.graphql_api.fixtures import Api

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SET = """mutation($input: SetAuditRetentionInput!) {
  setAuditRetention(input: $input) { organization { auditRetentionDays } } }"""
SHOWN = "{ organization { auditRetentionDays } }"
CREATE_DEPARTMENT = """mutation($input: CreateDepartmentInput!) {
  createDepartment(input: $input) { department { id } } }"""


def newest(tenant: Tenant) -> AuditEvent:
    return run(audit.list_audit_events(tenant.table, PageRequest(first=1))).items[0]


def stored_expiry(client: DynamoDBClient, tenant: Tenant, event: AuditEvent) -> int:
    item = raw_get(client, tenant.table.name, layout.AUDIT_EVENT.key_of(event))
    assert item is not None
    return int(item[layout.EXPIRES_AT]["N"])


def expected(event: AuditEvent, days: int) -> int:
    return int((event.occurred_at + timedelta(days=days)).timestamp())


def _codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


def test_mutation__organisation_sets_none__its_event_expires_after_the_default(
    api: Api, tenant: Tenant, client: DynamoDBClient
) -> None:
    api.admin_of(tenant).data(CREATE_DEPARTMENT, {"input": {"name": "Ops"}})

    event = newest(tenant)
    assert event.action == "department.create"
    assert stored_expiry(client, tenant, event) == expected(event, DEFAULT_RETENTION_DAYS)
    assert api.admin_of(tenant).data(SHOWN) == {"organization": {"auditRetentionDays": DEFAULT_RETENTION_DAYS}}


def test_set_audit_retention__admin__later_mutations_expire_after_it_without_reading_the_organisation_again(
    api: Api, tenant: Tenant, client: DynamoDBClient
) -> None:
    admin = api.admin_of(tenant)
    assert admin.data(SET, {"input": {"days": 400}}) == {
        "setAuditRetention": {"organization": {"auditRetentionDays": 400}}
    }
    change = newest(tenant)
    assert change.action == "organization.setAuditRetention"
    assert stored_expiry(client, tenant, change) == expected(
        change, DEFAULT_RETENTION_DAYS
    )  # the retention it replaced

    org_key = layout.ORGANIZATION.key_at(tenant.org_id).wire()
    with calls.listening() as log:
        admin.data(CREATE_DEPARTMENT, {"input": {"name": "Later"}})
    # The active check read the organisation (its loader's batch); the write read it no more.
    assert not [c for c in log.snapshot() if c.operation == "GetItem" and c.params.get("Key") == org_key]
    assert log.count("TransactWriteItems") == 1
    event = newest(tenant)
    assert event.action == "department.create" and stored_expiry(client, tenant, event) == expected(event, 400)
    assert admin.data(SHOWN) == {"organization": {"auditRetentionDays": 400}}

    assert admin.data(SET, {"input": {"days": None}})["setAuditRetention"]["organization"] == {
        "auditRetentionDays": DEFAULT_RETENTION_DAYS
    }
    found = run(organizations.get_organization(tenant.table))
    assert found is not None and found.audit_retention_days is None


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_set_audit_retention__not_an_admin__forbidden_and_nothing_written(api: Api, tenant: Tenant, role: Role) -> None:
    caller = api.as_(tenant.employee(role=role))
    before = newest(tenant)
    body = caller.query(SET, {"input": {"days": 400}})
    assert _codes(body) == ["FORBIDDEN"] and body["data"] == {"setAuditRetention": None}
    found = run(organizations.get_organization(tenant.table))
    assert found is not None and found.audit_retention_days is None
    assert newest(tenant).event_id == before.event_id  # nothing written


@pytest.mark.parametrize("days", [MIN_RETENTION_DAYS - 1, MAX_RETENTION_DAYS + 1, -1])
def test_set_audit_retention__out_of_bounds__bad_user_input_on_input_days(api: Api, tenant: Tenant, days: int) -> None:
    before = newest(tenant)
    body = api.admin_of(tenant).query(SET, {"input": {"days": days}})
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["extensions"]["field"] == "input.days"
    assert f"{MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}" in error["message"]
    assert newest(tenant).event_id == before.event_id  # nothing written


def test_set_audit_retention__platform_operator__forbidden(api: Api, tenant: Tenant) -> None:
    body = api.platform.query(SET, {"input": {"days": 400}})
    assert _codes(body) == ["FORBIDDEN"]


def test_expiry__whole_epoch_seconds_in_the_tables_ttl_attribute(tenant: Tenant) -> None:
    run(organizations.set_audit_retention(tenant.table, 365))
    event = newest(tenant)
    assert event.expires_at is not None and event.expires_at.tzinfo is UTC
    assert event.expires_at == datetime.fromtimestamp(expected(event, DEFAULT_RETENTION_DAYS), UTC)
