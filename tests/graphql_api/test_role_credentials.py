"""Per-tenant credentials through the real app: uvicorn over HTTP, STS (moto), DynamoDB Local.

The app is built with the three role settings, like production; each test checks the access
key of every DynamoDB request the app sent against the AssumeRole that issued it
(tests/sts.py).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest

from datastore.config import DatastoreSettings
from datastore.dev.local_sts import PLATFORM_ROLE as PLATFORM_ROLE_ARN
from datastore.dev.local_sts import SIGNIN_ROLE, TENANT_ROLE, role_env
from datastore.kinds import layout
from datastore.tenancy import keys
from graphql_api.app import create_app
from graphql_api.auth.signin import GRANT_TYPE, ID_TOKEN_TYPE
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.settings.api import ApiSettings
from tests.conftest import Tenant, TenantFactory, unique_domain
from tests.graphql_api import idp
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.live import serving
from tests.graphql_api.schema.mutations.documents import CREATE_ORGANIZATION, raw_id
from tests.sts import AssumeRoleLog, RoleWorld, SignatureLog, role_world

CONCURRENT = 50
ME = "{ me { email } }"


@dataclass
class Served:
    world: RoleWorld
    http: httpx.Client
    settings: ApiSettings

    def me(self, tenant: Tenant, http: httpx.Client | None = None) -> str:
        token = issue_token(self.settings, subject=tenant.admin.emp_id, org_id=tenant.org_id, role="admin")
        response = (http or self.http).post(
            "/graphql", json={"query": ME}, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert "errors" not in body, body
        email: str = body["data"]["me"]["email"]
        return email

    def concurrently(self, tenants: list[Tenant]) -> None:
        """One request per entry of ``tenants``, all at once; each must see its own admin.

        Each request has a client of its own: httpx's pool, shared by this many threads, can
        close a connection it has just handed to one of them (encode/httpcore#1110), and that
        request then reads a closed socket (``[Errno 9] Bad file descriptor``).
        """
        clients = [httpx.Client(base_url=self.http.base_url, timeout=self.http.timeout) for _ in tenants]
        try:
            with ThreadPoolExecutor(len(tenants)) as pool:
                seen = list(pool.map(self.me, tenants, clients))
        finally:
            for client in clients:
                client.close()
        assert seen == [tenant.admin.email for tenant in tenants]


@pytest.fixture
def served(
    settings: DatastoreSettings, table_name: str, sts_endpoint: str, jwks_server: idp.JwksServer
) -> Iterator[Served]:
    api_settings = ApiSettings.from_env(
        {
            "HR_ENV": "test",
            "ALLOWED_HOSTS": "127.0.0.1",
            "JWT_SECRET": TEST_SECRET,
            "OIDC_ISSUER": idp.ISSUER,
            "OIDC_AUDIENCE": idp.CLIENT_ID,
            "OIDC_JWKS": jwks_server.url,
            # 2 tenants x 50 requests in flight at once: above the default in-flight cap.
            "MAX_CONCURRENT_REQUESTS": "256",
        }
    )
    with (
        role_world(settings, table_name, sts_endpoint) as world,
        serving(create_app(world.datastore, api_settings)) as http,
    ):
        yield Served(world, http, api_settings)


@pytest.fixture(scope="module")
def jwks_server() -> Iterator[idp.JwksServer]:
    with idp.serving_jwks(idp.RSA) as server:
        yield server


def test_two_tenants_x_50_concurrent__one_assume_role_each__every_request_signed_by_its_tenant(
    served: Served, make_tenant: TenantFactory
) -> None:
    first, second = make_tenant(), make_tenant()
    served.concurrently([first, second] * CONCURRENT)
    world = served.world
    assert len(world.assumed.of_tags(TENANT_ROLE, {"org": first.org_id})) == 1
    assert len(world.assumed.of_tags(TENANT_ROLE, {"org": second.org_id})) == 1
    checked = world.tenant_requests(world.signed.snapshot())
    assert set(checked) == {first.org_id, second.org_id}
    # At least one DynamoDB request per HTTP request, every one checked.
    assert min(checked.values()) >= CONCURRENT


def test_expired_credentials__50_concurrent__one_refresh_and_all_signed_with_the_new_key(
    served: Served, make_tenant: TenantFactory
) -> None:
    tenant, other = make_tenant(), make_tenant()
    served.concurrently([tenant, other])
    world = served.world
    # Past expiry on our clock: no request may sign with the old credentials.
    world.clock.advance(world.roles.session_seconds + 1)
    mark = len(world.signed.snapshot())
    served.concurrently([tenant] * CONCURRENT)
    _, refreshed = world.assumed.of_tags(TENANT_ROLE, {"org": tenant.org_id})
    after = world.signed.since(mark)
    assert {request.access_key for request in after} == {refreshed.access_key}
    assert world.tenant_requests(after)[tenant.org_id] >= CONCURRENT
    # The other tenant's expired session is not refreshed until it is used.
    assert len(world.assumed.of_tags(TENANT_ROLE, {"org": other.org_id})) == 1


def test_sign_in__token_exchange__identity_read_by_sign_in_role_then_tenant_role(
    served: Served, tenant: Tenant
) -> None:
    form = {
        "grant_type": GRANT_TYPE,
        "subject_token": idp.id_token(tenant.admin.email),
        "subject_token_type": ID_TOKEN_TYPE,
    }
    response = served.http.post("/auth/token", data=form)
    assert response.status_code == 200, response.text
    world = served.world
    [sign_in] = world.assumed.of_tags(SIGNIN_ROLE, {})
    assert sign_in.session_name == "sign-in"
    identity_reads = [r for r in world.signed.snapshot() if r.access_key == sign_in.access_key]
    assert identity_reads and all(
        pk == layout.IDENTITY.partition(tenant.admin.email) for r in identity_reads for pk in r.partition_keys
    )
    tenant_requests = [r for r in world.signed.snapshot() if r.access_key != sign_in.access_key]
    assert world.tenant_requests(tenant_requests) == {tenant.org_id: len(tenant_requests)}
    assert tenant_requests


def test_platform__create_and_list_organizations__platform_role_with_provisioning_tag(served: Served) -> None:
    token = issue_token(served.settings, subject="operator", org_id=None, role=PLATFORM_ROLE)
    headers = {"Authorization": f"Bearer {token}"}
    domain = unique_domain()
    variables = {
        "input": {
            "name": "Initech",
            "plan": "PRO",
            "emailDomains": [domain],
            "adminEmail": f"boss@{domain}",
            "adminFirstName": "Bill",
            "adminLastName": "Lumbergh",
        }
    }
    created = served.http.post("/graphql", json={"query": CREATE_ORGANIZATION, "variables": variables}, headers=headers)
    assert "errors" not in created.json(), created.json()
    org_id = raw_id(created.json()["data"]["createOrganization"]["organization"]["id"])[0]
    listed = served.http.post(
        "/graphql", json={"query": "{ organizations(first: 1) { edges { node { id } } } }"}, headers=headers
    )
    assert "errors" not in listed.json(), listed.json()

    world = served.world
    [provisioning] = world.assumed.of_tags(PLATFORM_ROLE_ARN, {"provisioning": org_id})
    [platform] = world.assumed.of_tags(PLATFORM_ROLE_ARN, {})
    assert (provisioning.session_name, platform.session_name) == (f"provisioning-{org_id}", "platform")
    signed = world.signed.snapshot()
    assert signed and {r.access_key for r in signed} == {provisioning.access_key, platform.access_key}
    for request in signed:
        for pk in request.partition_keys:
            if request.access_key == provisioning.access_key:
                assert keys.in_tenant(pk, org_id) or keys.is_identity_pk(pk) or keys.is_domain_pk(pk), request
            else:
                assert pk == keys.ORGS_PK, request


def test_asgi_entry__role_settings_in_environment__tenant_request_signed_as_its_tenant(
    monkeypatch: pytest.MonkeyPatch, dynamodb_endpoint: str, table_name: str, sts_endpoint: str, tenant: Tenant
) -> None:
    """The production entry point (and Lambda's, which imports it) reads the role settings."""
    for name, value in {**role_env(sts_endpoint), "DYNAMODB_ENDPOINT": dynamodb_endpoint}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HR_TABLE_NAME", table_name)
    monkeypatch.setenv("HR_ENV", "production")
    monkeypatch.setenv("ALLOWED_HOSTS", "127.0.0.1")
    monkeypatch.setenv("JWT_SECRET", TEST_SECRET)
    sys.modules.pop("graphql_api.entrypoints.asgi", None)
    asgi = importlib.import_module("graphql_api.entrypoints.asgi")
    # The process's data plane client, shared by every Datastore on the same settings.
    signed = SignatureLog.of(asgi.datastore.aio)
    try:
        credentials = asgi.datastore.credentials
        assert credentials is not None and credentials.roles.tenant_role_arn == TENANT_ROLE
        assumed = AssumeRoleLog.of(credentials.sts)
        settings = ApiSettings.from_env({"HR_ENV": "production", "JWT_SECRET": TEST_SECRET})
        token = issue_token(settings, subject=tenant.admin.emp_id, org_id=tenant.org_id, role="admin")
        with serving(asgi.app) as http:
            response = http.post("/graphql", json={"query": ME}, headers={"Authorization": f"Bearer {token}"})
        assert response.json()["data"] == {"me": {"email": tenant.admin.email}}
        # The tenant's request, signed by its tenant session; beside it, only the server's stream
        # reader (its lease and checkpoints, under the platform role's "feed" session) and its
        # webhook dispatcher (its lease, and the organisations with endpoints: "webhooks").
        # (The dispatcher's rounds of other organisations with endpoints, if the session's table
        # holds any, assume the tenant role for each of them, under that organisation's tag.)
        sessions = assumed.snapshot()
        [session] = [
            assumed_session
            for assumed_session in sessions
            if assumed_session.role_arn == TENANT_ROLE and assumed_session.tags == {"org": tenant.org_id}
        ]
        others = [other for other in sessions if other is not session]
        assert {(other.role_arn, other.session_name) for other in others if other.role_arn != TENANT_ROLE} <= {
            (PLATFORM_ROLE_ARN, "feed"),
            (PLATFORM_ROLE_ARN, "webhooks"),
        }
        # The item requests in the tenant's space: the reader's DescribeTable (no item) goes with
        # the process's own credentials, as its stream reads do.
        tenant_requests = [
            request
            for request in signed.snapshot()
            if request.partition_keys and all(keys.org_id_of(pk) == tenant.org_id for pk in request.partition_keys)
        ]
        assert tenant_requests and {request.access_key for request in tenant_requests} == {session.access_key}
    finally:
        signed.stop(asgi.datastore.aio)
        asgi.datastore.close()
        asgi.datastore.client.close()
        sys.modules.pop("graphql_api.entrypoints.asgi", None)
