"""Identity providers against DynamoDB Local: register, change, remove, audit, sign-in's lookups."""

from __future__ import annotations

import pytest

from datastore.aws.calls import CallLog
from datastore.errors import Conflict, InvalidInput, NotFound, ScopeViolation
from datastore.kinds import layout
from datastore.signin import identity_providers
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope, SignInScope
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory

ISSUER = "https://login.acme.example"
AUTHORIZE = f"{ISSUER}/authorize"
TOKEN = f"{ISSUER}/token"


def register(tenant: Tenant, issuer: str = ISSUER, clients: tuple[str, ...] = ("web",), **kwargs: object) -> object:
    provider, _ = run(
        identity_providers.set_identity_provider(
            tenant.table,
            tenant.organization.org_id,
            issuer_url=issuer,
            client_id_list=clients,
            authorization_endpoint=AUTHORIZE,
            token_endpoint=TOKEN,
            **kwargs,  # type: ignore[arg-type]
        )
    )
    return provider


def sign_in(tenant: Tenant) -> Table:
    return tenant.table.with_scope(SignInScope())


def unique_issuer(tenant: Tenant) -> str:
    return f"https://idp.{tenant.domain}"


def test_register__record_client_items_and_audit_event(tenant: Tenant) -> None:
    issuer = unique_issuer(tenant)
    provider, created = run(
        identity_providers.set_identity_provider(
            tenant.table,
            tenant.organization.org_id,
            issuer_url=issuer,
            client_id_list=["web", "mobile"],
            authorization_endpoint=AUTHORIZE,
            token_endpoint=TOKEN,
        )
    )
    assert created and provider.version == 1 and provider.client_ids == ("web", "mobile")
    assert run(identity_providers.get_identity_provider(tenant.table, tenant.organization.org_id)) == provider
    for client in ("web", "mobile"):
        found = run(identity_providers.find_client(sign_in(tenant), issuer, client))
        assert found is not None and found.org_id == tenant.org_id
    assert run(identity_providers.find_client(sign_in(tenant), issuer, "other")) is None
    events = run(audit.list_audit_events(tenant.table, PageRequest(first=5))).items
    assert events[0].action == "identityProvider.register"
    assert {change.field for change in events[0].changes} >= {"issuer", "clientIds", "authorizationEndpoint"}


def test_change__dropped_clients_deleted_new_issuer_written_version_bumped(tenant: Tenant) -> None:
    issuer = unique_issuer(tenant)
    register(tenant, issuer, ("web", "mobile"))
    moved = f"{issuer}/v2"
    changed, created = run(
        identity_providers.set_identity_provider(
            tenant.table,
            tenant.organization.org_id,
            issuer_url=moved,
            client_id_list=["web"],
            authorization_endpoint=AUTHORIZE,
            token_endpoint=TOKEN,
        )
    )
    assert not created and changed.version == 2
    assert run(identity_providers.find_client(sign_in(tenant), issuer, "web")) is None
    assert run(identity_providers.find_client(sign_in(tenant), issuer, "mobile")) is None
    assert run(identity_providers.find_client(sign_in(tenant), moved, "web")) is not None
    events = run(audit.list_audit_events(tenant.table, PageRequest(first=5))).items
    assert events[0].action == "identityProvider.change"
    assert [(c.field, c.before, c.after) for c in events[0].changes if c.field == "issuer"] == [
        ("issuer", issuer, moved)
    ]


def test_set__same_settings_again__no_write(tenant: Tenant, call_log: CallLog) -> None:
    issuer = unique_issuer(tenant)
    register(tenant, issuer)
    before = len(call_log.snapshot())
    provider, created = run(
        identity_providers.set_identity_provider(
            tenant.table,
            tenant.organization.org_id,
            issuer_url=issuer,
            client_id_list=["web"],
            authorization_endpoint=AUTHORIZE,
            token_endpoint=TOKEN,
        )
    )
    assert not created and provider.version == 1
    assert [call.operation for call in call_log.snapshot()[before:]] == ["GetItem"]


def test_register__client_of_another_organisation__conflict_and_nothing_written(
    tenant: Tenant, make_tenant: TenantFactory
) -> None:
    issuer = unique_issuer(tenant)
    register(tenant, issuer, ("web",))
    other = make_tenant()
    with pytest.raises(Conflict, match="registered by another organisation"):
        register(other, issuer, ("own", "web"))
    assert run(identity_providers.get_identity_provider(other.table, other.organization.org_id)) is None
    assert run(identity_providers.find_client(sign_in(other), issuer, "own")) is None
    # One issuer, several organisations, each with its own clients (Google's issuer).
    register(other, issuer, ("own",))
    found = run(identity_providers.find_client(sign_in(other), issuer, "own"))
    assert found is not None and found.org_id == other.org_id


def test_register__platform_default_client__refused(tenant: Tenant) -> None:
    with pytest.raises(InvalidInput) as refused:
        register(tenant, "https://platform.example", ("hr-web",), reserved={("https://platform.example", "hr-web")})
    assert refused.value.field == "client_ids"


@pytest.mark.parametrize(
    ("issuer", "clients", "field"),
    [
        ("", ("web",), "issuer"),
        ("https://a b", ("web",), "issuer"),
        ("https://" + "a" * 250, ("web",), "issuer"),
        (ISSUER, (), "client_ids"),
        (ISSUER, ("a", "b", "c", "d", "e", "f"), "client_ids"),
        (ISSUER, ("web", "web"), "client_ids"),
        (ISSUER, ("we b",), "client_ids"),
    ],
)
def test_set__invalid_input__names_its_field(
    tenant: Tenant, issuer: str, clients: tuple[str, ...], field: str, call_log: CallLog
) -> None:
    with pytest.raises(InvalidInput) as refused:
        register(tenant, issuer, clients)
    assert refused.value.field == field
    assert call_log.snapshot() == []


def test_remove__record_and_clients_deleted_audited(tenant: Tenant) -> None:
    issuer = unique_issuer(tenant)
    register(tenant, issuer, ("web", "mobile"))
    removed = run(identity_providers.remove_identity_provider(tenant.table, tenant.organization.org_id))
    assert removed.issuer == issuer
    assert run(identity_providers.get_identity_provider(tenant.table, tenant.organization.org_id)) is None
    assert run(identity_providers.find_client(sign_in(tenant), issuer, "web")) is None
    events = run(audit.list_audit_events(tenant.table, PageRequest(first=5))).items
    assert events[0].action == "identityProvider.remove"
    with pytest.raises(NotFound):
        run(identity_providers.remove_identity_provider(tenant.table, tenant.organization.org_id))


def test_register__operator_at_onboarding_through_the_provisioning_scope(tenant: Tenant, platform: Table) -> None:
    issuer = unique_issuer(tenant)
    provisioning = platform.with_scope(PlatformScope(provisioning=tenant.organization.org_id, actor_id="op"))
    _, created = run(
        identity_providers.set_identity_provider(
            provisioning,
            tenant.organization.org_id,
            issuer_url=issuer,
            client_id_list=["web"],
            authorization_endpoint=AUTHORIZE,
            token_endpoint=TOKEN,
        )
    )
    assert created and run(identity_providers.find_client(sign_in(tenant), issuer, "web")) is not None
    events = run(audit.list_audit_events(tenant.table, PageRequest(first=5))).items
    assert (events[0].action, events[0].actor_id) == ("identityProvider.register", "op")
    with pytest.raises(ScopeViolation):
        run(
            identity_providers.set_identity_provider(
                platform,
                tenant.organization.org_id,
                issuer_url=issuer,
                client_id_list=["web"],
                authorization_endpoint=AUTHORIZE,
                token_endpoint=TOKEN,
            )
        )


def test_domain_owner__marker_read_by_sign_in(tenant: Tenant) -> None:
    assert run(identity_providers.domain_owner(sign_in(tenant), tenant.domain)) == tenant.org_id
    assert run(identity_providers.domain_owner(sign_in(tenant), "nobody.example")) is None


def test_client_items__outside_every_tenant_never_read_by_one(tenant: Tenant) -> None:
    issuer = unique_issuer(tenant)
    register(tenant, issuer)
    with pytest.raises(ScopeViolation):
        run(tenant.table.get(layout.ISSUER_CLIENT.key_at(issuer, "web")))
