"""Per-scope credentials: STS AssumeRole (moto's server) signing requests to DynamoDB Local.

What is checked is what went over the wire: AssumeRole's parameters on the STS client, and
the access key in each DynamoDB request's SigV4 ``Authorization`` header (tests/sts.py).
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from datastore.aws import calls, iam, probe
from datastore.aws.credentials import RoleSession, role_session
from datastore.config import DatastoreSettings, RoleSettings
from datastore.dev.local import free_port
from datastore.dev.local_sts import EXPORT_ROLE, LIFECYCLE_ROLE, PLATFORM_ROLE, SIGNIN_ROLE, TENANT_ROLE, role_env
from datastore.errors import ScopeViolation, Unavailable
from datastore.kinds import layout
from datastore.kinds.entities import Plan, Role
from datastore.lifecycle import offboarding
from datastore.lifecycle.export import Export
from datastore.signin import api_keys, identities
from datastore.table.pagination import PageRequest
from datastore.table.store import Datastore
from datastore.tenancy import keys
from datastore.tenancy.scope import (
    ApiKeyScope,
    LayoutScope,
    LifecycleScope,
    PlatformScope,
    SignInScope,
    TenantScope,
    WebhooksScope,
)
from datastore.tenants import employees, organizations, persisted_documents
from datastore.upkeep import layout_version
from tests.blocking import run, run_all
from tests.conftest import Tenant, TenantFactory, unique_domain
from tests.datastore.lifecycle.complete import complete
from tests.sts import RoleWorld, SignatureLog, Signed, role_world

CONCURRENT = 50


@pytest.fixture
def world(settings: DatastoreSettings, table_name: str, sts_endpoint: str) -> Iterator[RoleWorld]:
    with role_world(settings, table_name, sts_endpoint) as world:
        yield world


def read_admin(world: RoleWorld, tenant: Tenant) -> None:
    found = run(employees.get_employee(world.datastore.table(TenantScope(tenant.org_id)), tenant.admin.emp_id))
    assert found is not None and found.emp_id == tenant.admin.emp_id


def read_concurrently(world: RoleWorld, tenant: Tenant, times: int = CONCURRENT) -> None:
    with ThreadPoolExecutor(times) as pool:
        list(pool.map(lambda _: read_admin(world, tenant), range(times)))


def org_tag(tenant: Tenant) -> dict[str, str]:
    return {"org": tenant.org_id}


# --- which session signs ------------------------------------------------------------------


def test_tenant_table__request__signed_with_tenant_role_tagged_org(world: RoleWorld, tenant: Tenant) -> None:
    read_admin(world, tenant)
    [assumed] = world.assumed.snapshot()
    assert (assumed.role_arn, assumed.session_name, assumed.tags) == (
        TENANT_ROLE,
        f"org-{tenant.org_id}",
        {"org": tenant.org_id},
    )
    [request] = world.signed.snapshot()
    assert request.access_key == assumed.access_key
    assert world.tenant_requests([request]) == {tenant.org_id: 1}


def test_two_tenants__each_request__signed_with_its_own_tenants_key(
    world: RoleWorld, make_tenant: TenantFactory
) -> None:
    first, second = make_tenant(), make_tenant()
    with ThreadPoolExecutor(2 * CONCURRENT) as pool:
        list(pool.map(lambda i: read_admin(world, first if i % 2 else second), range(2 * CONCURRENT)))
    assert len(world.assumed.of_tags(TENANT_ROLE, org_tag(first))) == 1
    assert len(world.assumed.of_tags(TENANT_ROLE, org_tag(second))) == 1
    assert world.tenant_requests(world.signed.snapshot()) == {first.org_id: CONCURRENT, second.org_id: CONCURRENT}


def test_sign_in_scope__request__signed_with_sign_in_role_untagged(world: RoleWorld, tenant: Tenant) -> None:
    found = run(identities.find_identity(world.datastore.table(SignInScope()), tenant.admin.email))
    assert found is not None and found.org_id == tenant.org_id
    [assumed] = world.assumed.snapshot()
    assert (assumed.role_arn, assumed.session_name, assumed.tags) == (SIGNIN_ROLE, "sign-in", {})
    [request] = world.signed.snapshot()
    assert request.access_key == assumed.access_key
    assert request.partition_keys == [layout.IDENTITY.partition(tenant.admin.email)]


def test_api_key_scope__key_lookup__signed_with_sign_in_role_as_api_key(world: RoleWorld, tenant: Tenant) -> None:
    key, secret = run(api_keys.create_api_key(tenant.table, name="Sync", role=Role.EMPLOYEE))
    grant = run(api_keys.find_grant(world.datastore.table(ApiKeyScope()), secret))
    assert grant is not None and grant.key_id == key.key_id
    [assumed] = world.assumed.snapshot()
    assert (assumed.role_arn, assumed.session_name, assumed.tags) == (SIGNIN_ROLE, "api-key", {})
    [request] = world.signed.snapshot()
    assert request.access_key == assumed.access_key
    assert request.partition_keys == [layout.API_KEY_LOOKUP.partition(key.secret_hash)]


def test_persisted_document__signed_with_the_tenant_role_tagged_org(world: RoleWorld, tenant: Tenant) -> None:
    """A document is the organisation's: its requests fall under the tenant role's LeadingKeys."""
    document = "{ me { email } }"
    sha256 = hashlib.sha256(document.encode()).hexdigest()
    table = world.datastore.table(TenantScope(tenant.org_id))
    run(persisted_documents.put_document(table, tenant.org_id, sha256, document, datetime.now(UTC)))
    assert run(persisted_documents.get_document(table, tenant.org_id, sha256)) == document
    [assumed] = world.assumed.snapshot()
    assert (assumed.role_arn, assumed.tags) == (TENANT_ROLE, org_tag(tenant))
    signed = world.signed.snapshot()
    assert [request.operation for request in signed] == ["PutItem", "GetItem"]
    assert all(request.access_key == assumed.access_key for request in signed)
    assert world.tenant_requests(signed) == {tenant.org_id: 2}
    assert {pk for request in signed for pk in request.partition_keys} == {
        layout.PERSISTED_DOCUMENT.partition(tenant.org_id, sha256)
    }


def test_platform_scope__create_organization__provisioning_writes_tagged_with_new_org(world: RoleWorld) -> None:
    domain = unique_domain()
    org, _admin = run(
        organizations.create_organization(
            world.datastore.table(PlatformScope(actor_id="operator")),
            name="Initech",
            plan=Plan.PRO,
            email_domains=(domain,),
            admin_email=f"first@{domain}",
            admin_first_name="Bill",
            admin_last_name="Lumbergh",
        )
    )
    [assumed] = world.assumed.snapshot()
    assert (assumed.role_arn, assumed.session_name, assumed.tags) == (
        PLATFORM_ROLE,
        f"provisioning-{org.org_id}",
        {"provisioning": org.org_id},
    )
    [write] = world.signed.snapshot()
    assert write.operation == "TransactWriteItems" and write.access_key == assumed.access_key
    outside = [
        pk
        for pk in write.partition_keys
        if not (keys.in_tenant(pk, org.org_id) or keys.is_identity_pk(pk) or keys.is_domain_pk(pk))
    ]
    assert outside == []


def test_platform_scope__list_organizations__platform_role_untagged(world: RoleWorld) -> None:
    run(organizations.list_organizations(world.datastore.table(PlatformScope()), PageRequest(first=1)))
    [assumed] = world.assumed.snapshot()
    assert (assumed.role_arn, assumed.session_name, assumed.tags) == (PLATFORM_ROLE, "platform", {})
    [request] = world.signed.snapshot()
    assert (request.operation, request.access_key, request.partition_keys) == ("Query", assumed.access_key, ["ORGS"])


def test_layout_scope__version_read__platform_role_untagged_as_layout(world: RoleWorld) -> None:
    run(layout_version.stored_version(world.datastore.table(LayoutScope())))
    [assumed] = world.assumed.snapshot()
    assert (assumed.role_arn, assumed.session_name, assumed.tags) == (PLATFORM_ROLE, "layout", {})
    [request] = world.signed.snapshot()
    assert (request.operation, request.access_key, request.partition_keys) == (
        "GetItem",
        assumed.access_key,
        [keys.LAYOUT_PK],
    )


def test_unscoped_request__signed_with_the_clients_own_credentials(world: RoleWorld) -> None:
    assert probe.table_ready(world.datastore.client, world.datastore.table_name)
    [request] = world.signed.snapshot()
    assert request.operation == "DescribeTable"
    assert world.assumed.snapshot() == []
    assert world.assumed.owner(request.access_key) is None


def test_role_session__scope_no_role_serves__refused() -> None:
    class Stranger:
        name = "stranger"

        def may_read(self, partition_key: str) -> bool:
            return True

        def may_write(self, partition_key: str) -> bool:
            return True

    roles = RoleSettings(TENANT_ROLE, SIGNIN_ROLE, PLATFORM_ROLE, EXPORT_ROLE, LIFECYCLE_ROLE)
    with pytest.raises(ScopeViolation, match="no role signs for stranger"):
        role_session(roles, Stranger())
    assert role_session(roles, TenantScope("A", "someone")) == role_session(roles, TenantScope("A", None))


def allowed_by(role: str, org_id: str, request: Signed) -> bool:
    """Whether the role's policy (datastore/aws/iam.py, the org tag given) lets ``request`` through:
    an Allow statement with its operation whose LeadingKeys patterns match every partition key.
    A transaction or batch is allowed item by item, as IAM does, by any write action."""
    wanted = {f"dynamodb:{request.operation}"}
    if request.operation in ("TransactWriteItems", "BatchWriteItem"):
        wanted = {f"dynamodb:{action}" for action in ("PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem")}
    statements = iam.policies("arn:aws:dynamodb:eu-west-1:1:table/t")[role]["Statement"]

    def matched(pk: str) -> bool:
        for statement in statements:
            patterns = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
            tagged = [pattern.replace("${aws:PrincipalTag/org}", org_id) for pattern in patterns]
            if (
                wanted & set(statement["Action"])
                and (request.operation != "BatchWriteItem" or "dynamodb:BatchWriteItem" in statement["Action"])
                and any(fnmatch.fnmatchcase(pk, pattern) for pattern in tagged)
            ):
                return True
        return False

    return all(matched(pk) for pk in request.partition_keys)


def test_lifecycle_scopes__export_then_offboarding__each_signed_by_its_role_tagged_org_within_its_policy(
    world: RoleWorld, make_tenant: TenantFactory
) -> None:
    """The export role reads, the lifecycle role deletes, each inside its LeadingKeys."""
    whole = complete(make_tenant("Leaving"))
    org_id = whole.tenant.org_id
    exporter = world.datastore.table(LifecycleScope(org_id, "export"))
    lines = list(run_all(Export(exporter, org_id, source="t").lines()))
    [assumed] = world.assumed.snapshot()
    assert (assumed.role_arn, assumed.session_name, assumed.tags) == (EXPORT_ROLE, f"export-{org_id}", {"org": org_id})
    exported = world.signed.snapshot()
    assert len(lines) > 10 and {request.operation for request in exported} == {"Query", "BatchGetItem"}
    assert [request for request in exported if not allowed_by("TenantExport", org_id, request)] == []

    world.signed.requests.clear()
    operator = world.datastore.table(LifecycleScope(org_id, "offboard", "operator"))
    run(offboarding.close(operator, org_id, grace=timedelta(0)))
    run(offboarding.delete(operator, org_id))
    lifecycle = [call for call in world.assumed.snapshot() if call.role_arn == LIFECYCLE_ROLE]
    assert {(call.session_name, tuple(call.tags.items())) for call in lifecycle} == {
        (f"offboard-{org_id}", (("org", org_id),))
    }
    deleted = world.signed.snapshot()
    assert {"BatchWriteItem", "TransactWriteItems"} <= {request.operation for request in deleted}
    assert [request for request in deleted if not allowed_by("TenantLifecycle", org_id, request)] == []
    # Neither role reaches another organisation's keys, nor the other's own statements.
    other = make_tenant("Staying")
    assert not allowed_by("TenantExport", org_id, Signed("Query", "k", [keys.org_pk(other.org_id)]))
    assert not allowed_by("TenantExport", org_id, Signed("PutItem", "k", [keys.org_pk(org_id)]))
    assert not allowed_by("TenantExport", org_id, Signed("GetItem", "k", [f"APIKEY#{'0' * 64}"]))
    assert not allowed_by("TenantLifecycle", org_id, Signed("PutItem", "k", [keys.lifecycle_pk(other.org_id)]))


# --- one AssumeRole per tenant per expiry -------------------------------------------------


def test_first_use__concurrent_requests__one_assume_role(world: RoleWorld, tenant: Tenant) -> None:
    read_concurrently(world, tenant)
    assert len(world.assumed.of_tags(TENANT_ROLE, org_tag(tenant))) == 1
    assert world.tenant_requests(world.signed.snapshot()) == {tenant.org_id: CONCURRENT}


def test_expiry__inside_mandatory_window__one_refresh_and_every_request_waits_for_it(
    world: RoleWorld, tenant: Tenant
) -> None:
    read_admin(world, tenant)
    # Less than half the refresh window left: every request needs the new credentials.
    world.clock.advance(world.roles.session_seconds - world.roles.refresh_seconds // 4)
    mark = len(world.signed.snapshot())
    read_concurrently(world, tenant)
    _, refreshed = world.assumed.of_tags(TENANT_ROLE, org_tag(tenant))
    after = world.signed.since(mark)
    assert {request.access_key for request in after} == {refreshed.access_key}
    assert world.tenant_requests(after) == {tenant.org_id: CONCURRENT}
    # The refreshed credentials last a whole session again, counted on our clock.
    read_concurrently(world, tenant)
    assert len(world.assumed.of_tags(TENANT_ROLE, org_tag(tenant))) == 2


def test_expiry__inside_advisory_window__one_refresh_while_others_keep_signing(
    world: RoleWorld, tenant: Tenant
) -> None:
    read_admin(world, tenant)
    # Between half the refresh window and all of it left: one request refreshes.
    world.clock.advance(world.roles.session_seconds - world.roles.refresh_seconds * 3 // 4)
    mark = len(world.signed.snapshot())
    read_concurrently(world, tenant)
    first, refreshed = world.assumed.of_tags(TENANT_ROLE, org_tag(tenant))
    after = world.signed.since(mark)
    assert {request.access_key for request in after} <= {first.access_key, refreshed.access_key}
    assert world.tenant_requests(after) == {tenant.org_id: CONCURRENT}
    read_admin(world, tenant)
    assert world.signed.snapshot()[-1].access_key == refreshed.access_key
    assert len(world.assumed.of_tags(TENANT_ROLE, org_tag(tenant))) == 2


def test_before_refresh_window__requests__no_assume_role(world: RoleWorld, tenant: Tenant) -> None:
    read_admin(world, tenant)
    world.clock.advance(world.roles.session_seconds - world.roles.refresh_seconds - 60)
    read_concurrently(world, tenant)
    assert len(world.assumed.of_tags(TENANT_ROLE, org_tag(tenant))) == 1


# --- the cache is bounded ------------------------------------------------------------------


def test_cache__one_tenant_more_than_it_holds__least_recent_evicted(
    settings: DatastoreSettings, table_name: str, sts_endpoint: str, make_tenant: TenantFactory
) -> None:
    a, b, c = make_tenant(), make_tenant(), make_tenant()
    with role_world(settings, table_name, sts_endpoint, ROLE_CACHE_SIZE="2") as world:
        credentials = world.datastore.credentials
        assert credentials is not None
        for tenant in (a, b, a, c):  # b is now the least recently used of the two held
            read_admin(world, tenant)
        assert credentials.cached() == [
            RoleSession(TENANT_ROLE, f"org-{a.org_id}", (("org", a.org_id),)),
            RoleSession(TENANT_ROLE, f"org-{c.org_id}", (("org", c.org_id),)),
        ]
        read_admin(world, a)
        assert len(world.assumed.of_tags(TENANT_ROLE, org_tag(a))) == 1
        read_admin(world, b)
        assert len(world.assumed.of_tags(TENANT_ROLE, org_tag(b))) == 2
        assert len(credentials.cached()) == 2
        assert world.tenant_requests(world.signed.snapshot()) == {a.org_id: 3, b.org_id: 2, c.org_id: 1}


# --- failures and the unconfigured default ------------------------------------------------


def test_sts_unreachable__tenant_read__unavailable_and_nothing_sent(
    settings: DatastoreSettings, table_name: str, tenant: Tenant
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    with role_world(replace(settings, max_attempts=1), table_name, closed) as world:
        with pytest.raises(Unavailable, match=r"STS could not be reached for org-\w+ \(EndpointConnectionError\)"):
            run(world.datastore.table(TenantScope(tenant.org_id)).get(layout.ORGANIZATION.key_at(tenant.org_id)))
        assert world.signed.snapshot() == []


def test_connect__role_settings__signs_per_scope(
    settings: DatastoreSettings, sts_endpoint: str, table_name: str, tenant: Tenant
) -> None:
    datastore = Datastore.connect(replace(settings, roles=RoleSettings.from_env(role_env(sts_endpoint))))
    signed = SignatureLog.of(datastore.aio)
    try:
        assert datastore.credentials is not None
        assert run(organizations.get_organization(datastore.table(TenantScope(tenant.org_id)))) is not None
        [request] = signed.snapshot()
        assert datastore.credentials.cached() == [role_session(datastore.credentials.roles, TenantScope(tenant.org_id))]
        assert request.access_key.startswith("ASIA")  # STS's temporary keys
    finally:
        signed.stop(datastore.aio)
        datastore.close()


def test_connect__no_role_settings__every_scope_signed_with_one_credential(
    settings: DatastoreSettings, make_tenant: TenantFactory
) -> None:
    tenants = (make_tenant(), make_tenant())  # made first: their writes share the datastore's client
    datastore = Datastore.connect(settings)
    signed = SignatureLog.of(datastore.aio)
    try:
        assert datastore.credentials is None
        for tenant in tenants:
            assert run(organizations.get_organization(datastore.table(TenantScope(tenant.org_id)))) is not None
        run(identities.find_identity(datastore.table(SignInScope()), "nobody@example.com"))
        assert len(signed.snapshot()) == 3
        assert len({request.access_key for request in signed.snapshot()}) == 1
    finally:
        signed.stop(datastore.aio)
        datastore.close()


def test_instrumented__role_signed_requests__recorded_like_any_other(world: RoleWorld, tenant: Tenant) -> None:
    with calls.listening() as log:
        read_admin(world, tenant)
    assert log.operations() == ["GetItem"]


def test_role_session__webhooks_scope__the_platform_role_listing_organisations_with_endpoints() -> None:
    roles = RoleSettings(TENANT_ROLE, SIGNIN_ROLE, PLATFORM_ROLE, EXPORT_ROLE, LIFECYCLE_ROLE)
    assert role_session(roles, WebhooksScope()) == RoleSession(PLATFORM_ROLE, "webhooks")
    (statement,) = [s for s in iam.policies("arn:t")["Platform"]["Statement"] if s["Sid"] == "WebhookOrganizations"]
    assert statement["Action"] == ["dynamodb:Query"]
    assert statement["Resource"] == ["arn:t/index/GSI1"]  # the index only: the list, never an item
    assert statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["WEBHOOKS"]
