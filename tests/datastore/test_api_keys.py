"""API keys in the datastore: the two items, one GetItem to authenticate, revocation, lastUsedAt."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest

from datastore import api_keys, audit, calls, ids
from datastore.entities import ApiKeyGrant, ApiKeyStatus, Role
from datastore.errors import Conflict, InvalidInput, NotFound, ScopeViolation
from datastore.pagination import PageRequest
from datastore.scope import ApiKeyScope
from datastore.table import Table
from tests.conftest import Tenant, TenantFactory


@pytest.fixture
def key_reader(platform: Table) -> Table:
    return platform.with_scope(ApiKeyScope())


def test_create_api_key__secret__prefixed_random_and_only_its_hash_stored(tenant: Tenant) -> None:
    with calls.listening() as log:
        key, secret = api_keys.create_api_key(tenant.table, name="HRIS sync", role=Role.ADMIN)
    _other_key, other_secret = api_keys.create_api_key(tenant.table, name="HRIS sync", role=Role.ADMIN)
    assert secret.startswith("hrk_") and len(secret) == 47 and secret != other_secret
    assert key.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    # One transaction: the audit event, the record and the lookup item; no item holds the secret.
    assert log.operations() == ["TransactWriteItems"]
    written = log.calls[0].params["TransactItems"]
    assert len(written) == 3
    assert secret not in repr(written)
    partitions = sorted(item["Put"]["Item"]["PK"]["S"] for item in written)
    assert f"APIKEY#{key.secret_hash}" in partitions and f"ORG#{tenant.org_id}" in partitions


def test_find_grant__active_key__one_strongly_consistent_get_item(tenant: Tenant, key_reader: Table) -> None:
    key, secret = api_keys.create_api_key(tenant.table, name="Script", role=Role.EMPLOYEE)
    with calls.listening() as log:
        grant = api_keys.find_grant(key_reader, secret)
    assert grant == ApiKeyGrant(tenant.org_id, key.key_id, Role.EMPLOYEE, ApiKeyStatus.ACTIVE)
    assert log.operations() == ["GetItem"]
    assert log.calls[0].params["ConsistentRead"] is True


def test_find_grant__unknown_or_malformed_secret__none_or_invalid_input_without_call(key_reader: Table) -> None:
    assert api_keys.find_grant(key_reader, api_keys.new_secret()) is None
    with calls.listening() as log:
        for malformed in ("hrk_", "hrk_short", "hrk_" + "a" * 44, "hrk_" + "!" * 43, "eyJhbGciOi"):
            with pytest.raises(InvalidInput):
                api_keys.find_grant(key_reader, malformed)
    assert log.operations() == []


def test_find_grant__tenant_scope__scope_violation(tenant: Tenant) -> None:
    _key, secret = api_keys.create_api_key(tenant.table, name="Script", role=Role.EMPLOYEE)
    with pytest.raises(ScopeViolation):
        api_keys.find_grant(tenant.table, secret)


def test_create_api_key__manager_role_or_bad_name__invalid_input_nothing_written(tenant: Tenant) -> None:
    with calls.listening() as log:
        with pytest.raises(InvalidInput, match="role"):
            api_keys.create_api_key(tenant.table, name="Script", role=Role.MANAGER)
        with pytest.raises(InvalidInput, match="name"):
            api_keys.create_api_key(tenant.table, name="  ", role=Role.ADMIN)
    assert log.operations() == []


def test_revoke_api_key__active__record_and_lookup_revoked_in_one_transaction(
    tenant: Tenant, key_reader: Table
) -> None:
    key, secret = api_keys.create_api_key(tenant.table, name="Script", role=Role.ADMIN)
    with calls.listening() as log:
        revoked = api_keys.revoke_api_key(tenant.table, key.key_id)
    # A consistent read of the record, then record, lookup item and audit event together.
    assert log.operations() == ["GetItem", "TransactWriteItems"]
    assert len(log.calls[1].params["TransactItems"]) == 3
    assert revoked.status is ApiKeyStatus.REVOKED and revoked.revoked_at is not None
    grant = api_keys.find_grant(key_reader, secret)
    assert grant is not None and grant.status is ApiKeyStatus.REVOKED
    stored = api_keys.get_api_key(tenant.table, key.key_id, consistent=True)
    assert stored == revoked
    with pytest.raises(Conflict):
        api_keys.revoke_api_key(tenant.table, key.key_id)


def test_revoke_api_key__other_tenants_key__not_found_and_key_still_active(
    tenant: Tenant, make_tenant: TenantFactory, key_reader: Table
) -> None:
    other = make_tenant("Other")
    key, secret = api_keys.create_api_key(other.table, name="Theirs", role=Role.ADMIN)
    with pytest.raises(NotFound):
        api_keys.revoke_api_key(tenant.table, key.key_id)
    grant = api_keys.find_grant(key_reader, secret)
    assert grant is not None and grant.status is ApiKeyStatus.ACTIVE


def test_lifecycle__create_and_revoke__audit_events_without_the_hash(tenant: Tenant) -> None:
    key, _secret = api_keys.create_api_key(tenant.table, name="Script", role=Role.EMPLOYEE)
    api_keys.revoke_api_key(tenant.table, key.key_id)
    events = list(audit.list_audit_events(tenant.table, PageRequest(first=2)).items)
    assert [(e.action, e.entity_type, e.entity_id) for e in events] == [
        ("apiKey.revoke", "ApiKey", key.key_id),
        ("apiKey.create", "ApiKey", key.key_id),
    ]
    revoke_changes = {change.field: (change.before, change.after) for change in events[0].changes}
    assert revoke_changes["status"] == ("active", "revoked")
    assert all(change.field != "secretHash" for event in events for change in event.changes)
    assert key.secret_hash not in repr(events)


def test_list_api_keys__keys_of_this_tenant_only__one_query(tenant: Tenant, make_tenant: TenantFactory) -> None:
    other = make_tenant("Other")
    api_keys.create_api_key(other.table, name="Theirs", role=Role.ADMIN)
    mine = [api_keys.create_api_key(tenant.table, name=f"Key {n}", role=Role.EMPLOYEE)[0] for n in range(3)]
    with calls.listening() as log:
        page = api_keys.list_api_keys(tenant.table, PageRequest(first=10))
    assert [key.key_id for key in page.items] == [key.key_id for key in mine]
    assert log.operations() == ["Query"]


def test_record_use__twice_within_a_minute__written_once_then_again_after(tenant: Tenant) -> None:
    key, _secret = api_keys.create_api_key(tenant.table, name="Script", role=Role.EMPLOYEE)
    first = key.created_at
    with calls.listening() as log:
        assert api_keys.record_use(tenant.table, key.key_id, first) is True
        assert api_keys.record_use(tenant.table, key.key_id, first + timedelta(seconds=59)) is False
        assert api_keys.record_use(tenant.table, key.key_id, first + timedelta(seconds=61)) is True
    assert log.operations() == ["UpdateItem"] * 3
    stored = api_keys.get_api_key(tenant.table, key.key_id, consistent=True)
    assert stored is not None and stored.last_used_at == first + timedelta(seconds=61)


def test_record_use__no_such_key__nothing_created(tenant: Tenant) -> None:
    missing = ids.new_id()
    assert api_keys.record_use(tenant.table, missing, tenant.organization.created_at) is False
    assert api_keys.get_api_key(tenant.table, missing, consistent=True) is None
