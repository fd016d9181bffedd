"""API keys in the datastore: the two items, one GetItem to authenticate, revocation, lastUsedAt."""

from __future__ import annotations

import hashlib
import time
from datetime import timedelta

import pytest

from datastore.aws import calls
from datastore.errors import Conflict, InvalidInput, NotFound, ScopeViolation
from datastore.kinds.entities import ApiKeyGrant, ApiKeyStatus, IdentityProvider, Role, SessionStatus
from datastore.signin import api_keys, identity_providers, sessions
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.tenancy.scope import ApiKeyScope, SignInScope, TenantScope
from datastore.values import ids
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory


@pytest.fixture
def key_reader(platform: Table) -> Table:
    return platform.with_scope(ApiKeyScope())


def test_create_api_key__secret__prefixed_random_and_only_its_hash_stored(tenant: Tenant) -> None:
    with calls.listening() as log:
        key, secret = run(api_keys.create_api_key(tenant.table, name="HRIS sync", role=Role.ADMIN))
    _other_key, other_secret = run(api_keys.create_api_key(tenant.table, name="HRIS sync", role=Role.ADMIN))
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
    key, secret = run(api_keys.create_api_key(tenant.table, name="Script", role=Role.EMPLOYEE))
    with calls.listening() as log:
        grant = run(api_keys.find_grant(key_reader, secret))
    assert grant == ApiKeyGrant(tenant.org_id, key.key_id, Role.EMPLOYEE, ApiKeyStatus.ACTIVE)
    assert log.operations() == ["GetItem"]
    assert log.calls[0].params["ConsistentRead"] is True


def test_find_grant__unknown_or_malformed_secret__none_or_invalid_input_without_call(key_reader: Table) -> None:
    assert run(api_keys.find_grant(key_reader, api_keys.new_secret())) is None
    with calls.listening() as log:
        for malformed in ("hrk_", "hrk_short", "hrk_" + "a" * 44, "hrk_" + "!" * 43, "eyJhbGciOi"):
            with pytest.raises(InvalidInput):
                run(api_keys.find_grant(key_reader, malformed))
    assert log.operations() == []


def test_find_grant__tenant_scope__scope_violation(tenant: Tenant) -> None:
    _key, secret = run(api_keys.create_api_key(tenant.table, name="Script", role=Role.EMPLOYEE))
    with pytest.raises(ScopeViolation):
        run(api_keys.find_grant(tenant.table, secret))


def test_create_api_key__manager_role_or_bad_name__invalid_input_nothing_written(tenant: Tenant) -> None:
    with calls.listening() as log:
        with pytest.raises(InvalidInput, match="role"):
            run(api_keys.create_api_key(tenant.table, name="Script", role=Role.MANAGER))
        with pytest.raises(InvalidInput, match="name"):
            run(api_keys.create_api_key(tenant.table, name="  ", role=Role.ADMIN))
    assert log.operations() == []


def test_revoke_api_key__active__record_and_lookup_revoked_in_one_transaction(
    tenant: Tenant, key_reader: Table
) -> None:
    key, secret = run(api_keys.create_api_key(tenant.table, name="Script", role=Role.ADMIN))
    with calls.listening() as log:
        revoked = run(api_keys.revoke_api_key(tenant.table, key.key_id))
    # Consistent reads of the record and of the organisation's provider (it has none), then
    # record, lookup item and audit event together.
    assert log.operations() == ["GetItem", "GetItem", "TransactWriteItems"]
    assert len(log.calls[2].params["TransactItems"]) == 3
    assert revoked.status is ApiKeyStatus.REVOKED and revoked.revoked_at is not None
    grant = run(api_keys.find_grant(key_reader, secret))
    assert grant is not None and grant.status is ApiKeyStatus.REVOKED
    stored = run(api_keys.get_api_key(tenant.table, key.key_id, consistent=True))
    assert stored == revoked
    with pytest.raises(Conflict):
        run(api_keys.revoke_api_key(tenant.table, key.key_id))


def test_revoke_api_key__other_tenants_key__not_found_and_key_still_active(
    tenant: Tenant, make_tenant: TenantFactory, key_reader: Table
) -> None:
    other = make_tenant("Other")
    key, secret = run(api_keys.create_api_key(other.table, name="Theirs", role=Role.ADMIN))
    with pytest.raises(NotFound):
        run(api_keys.revoke_api_key(tenant.table, key.key_id))
    grant = run(api_keys.find_grant(key_reader, secret))
    assert grant is not None and grant.status is ApiKeyStatus.ACTIVE


def test_lifecycle__create_and_revoke__audit_events_without_the_hash(tenant: Tenant) -> None:
    key, _secret = run(api_keys.create_api_key(tenant.table, name="Script", role=Role.EMPLOYEE))
    run(api_keys.revoke_api_key(tenant.table, key.key_id))
    events = list(run(audit.list_audit_events(tenant.table, PageRequest(first=2))).items)
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
    run(api_keys.create_api_key(other.table, name="Theirs", role=Role.ADMIN))
    mine = [run(api_keys.create_api_key(tenant.table, name=f"Key {n}", role=Role.EMPLOYEE))[0] for n in range(3)]
    with calls.listening() as log:
        page = run(api_keys.list_api_keys(tenant.table, PageRequest(first=10)))
    assert [key.key_id for key in page.items] == [key.key_id for key in mine]
    assert log.operations() == ["Query"]


def test_record_use__twice_within_a_minute__written_once_then_again_after(tenant: Tenant) -> None:
    key, _secret = run(api_keys.create_api_key(tenant.table, name="Script", role=Role.EMPLOYEE))
    first = key.created_at
    with calls.listening() as log:
        assert run(api_keys.record_use(tenant.table, key.key_id, first)) is True
        assert run(api_keys.record_use(tenant.table, key.key_id, first + timedelta(seconds=59))) is False
        assert run(api_keys.record_use(tenant.table, key.key_id, first + timedelta(seconds=61))) is True
    assert log.operations() == ["UpdateItem"] * 3
    stored = run(api_keys.get_api_key(tenant.table, key.key_id, consistent=True))
    assert stored is not None and stored.last_used_at == first + timedelta(seconds=61)


def test_record_use__no_such_key__nothing_created(tenant: Tenant) -> None:
    missing = ids.new_id()
    assert run(api_keys.record_use(tenant.table, missing, tenant.organization.created_at)) is False
    assert run(api_keys.get_api_key(tenant.table, missing, consistent=True)) is None


# --- a provider a key registered: its sessions end with the key --------------------------------

LIFETIMES = sessions.Lifetimes(idle=timedelta(hours=1), absolute=timedelta(days=1))


def _provider_by(table: Table, tenant: Tenant, issuer: str) -> IdentityProvider:
    provider, _ = run(
        identity_providers.set_identity_provider(
            table,
            tenant.organization.org_id,
            issuer_url=issuer,
            client_id_list=["web"],
            authorization_endpoint=f"{issuer}/authorize",
            token_endpoint=f"{issuer}/token",
        )
    )
    return provider


def _refresh(tenant: Tenant, token: str) -> sessions.Rotated:
    grant = run(sessions.find_grant(tenant.table.with_scope(SignInScope()), token))
    assert grant is not None
    return run(sessions.rotate(tenant.table, grant, token, LIFETIMES, successor_key=b"k" * 32))


def test_revoke_api_key__it_registered_the_provider__sessions_begun_through_it_end(tenant: Tenant) -> None:
    """Data from before keys were refused that write: an ADMIN key registered the provider
    (the audit event names it as the actor)."""
    key, _secret = run(api_keys.create_api_key(tenant.table, name="Leaked", role=Role.ADMIN))
    as_key = tenant.table.with_scope(TenantScope(tenant.organization.org_id, key.key_id))
    provider = _provider_by(as_key, tenant, f"https://idp.{tenant.domain}")
    assert run(identity_providers.last_changed_by(tenant.table, provider)) == key.key_id
    through, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES, provider=provider))
    _, platform_token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    token = _refresh(tenant, token).token

    run(api_keys.revoke_api_key(tenant.table, key.key_id))

    with pytest.raises(sessions.RefreshRefused, match="identity provider"):
        _refresh(tenant, token)
    ended = run(sessions.get_session(tenant.table, tenant.admin.emp_id, through.session_id))
    assert ended is not None and ended.status is SessionStatus.ENDED
    _refresh(tenant, platform_token)  # not begun through it
    kept = run(identity_providers.get_identity_provider(tenant.table, tenant.organization.org_id, consistent=True))
    assert kept is not None and kept.sessions_ended_at is not None and kept.version == provider.version
    # A session begun after the revocation, through the same provider, works.
    time.sleep(0.002)
    _, later = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES, provider=kept))
    _refresh(tenant, later)


def test_revoke_api_key__a_person_changed_the_provider_since__sessions_go_on(tenant: Tenant) -> None:
    key, _secret = run(api_keys.create_api_key(tenant.table, name="Old", role=Role.ADMIN))
    as_key = tenant.table.with_scope(TenantScope(tenant.organization.org_id, key.key_id))
    issuer = f"https://idp.{tenant.domain}"
    _provider_by(as_key, tenant, issuer)
    run(
        identity_providers.set_identity_provider(
            tenant.table,  # the admin's
            tenant.organization.org_id,
            issuer_url=issuer,
            client_id_list=["web", "mobile"],
            authorization_endpoint=f"{issuer}/authorize",
            token_endpoint=f"{issuer}/token",
        )
    )
    provider = run(identity_providers.get_identity_provider(tenant.table, tenant.organization.org_id, consistent=True))
    assert provider is not None
    assert run(identity_providers.last_changed_by(tenant.table, provider)) == tenant.admin.emp_id
    _, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES, provider=provider))
    run(api_keys.revoke_api_key(tenant.table, key.key_id))
    _refresh(tenant, token)
