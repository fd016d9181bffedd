"""Fixtures for the API suites: the real server over HTTP, and clients holding role tokens.

A pytest plugin registered by tests/conftest.py, so every suite shares one server.

The server is the production Starlette app under uvicorn on a free port, on the session's
DynamoDB Local; tests talk to it with httpx, as a front-end would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from datastore.aws.client import AsyncDynamo
from datastore.kinds.entities import Employee
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.live import serving

TEST_SECRET = "test-secret-0123456789-0123456789-abcdef"


@pytest.fixture(scope="session")
def api_settings() -> ApiSettings:
    return ApiSettings.from_env(
        {
            "HR_ENV": "test",
            # The suite's clients address the server as 127.0.0.1 (tests/graphql_api/live.py).
            "ALLOWED_HOSTS": "127.0.0.1",
            "JWT_SECRET": TEST_SECRET,
            "GRAPHIQL": "true",
            "INTROSPECTION": "true",
            # The session makes hundreds of tenants; metrics tests read their own tenant's figures.
            "METRICS_MAX_TENANTS": "100000",
            # The tenant rate limit charges every request of the suite, but with buckets large
            # enough that no other test meets it (200 concurrent moves from one admin, say);
            # test_tenant_rate.py serves its own small buckets.
            "TENANT_COST_PER_SECOND": "1000000",
            "TENANT_COST_BURST": "1000000",
        }
    )


@pytest.fixture(scope="session")
def server_url(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings) -> Iterator[str]:
    from graphql_api.app import create_app  # imported by the suites that serve, not every suite

    with serving(create_app(new_datastore(table_name), api_settings)) as http:
        yield str(http.base_url).rstrip("/")


@dataclass
class GraphQLClient:
    """Posts GraphQL documents to the server, optionally with a bearer token."""

    http: httpx.Client
    token: str | None = None

    def post(self, query: str, variables: dict[str, Any] | None = None, **extra: Any) -> httpx.Response:
        headers = {} if self.token is None else {"Authorization": f"Bearer {self.token}"}
        return self.http.post("/graphql", json={"query": query, "variables": variables or {}, **extra}, headers=headers)

    def query(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The whole response body (``data`` and ``errors``)."""
        response = self.post(query, variables)
        body: dict[str, Any] = response.json()
        return body

    def data(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``data`` of a response that must have no errors."""
        body = self.query(query, variables)
        assert "errors" not in body, body["errors"]
        result: dict[str, Any] = body["data"]
        return result

    def with_token(self, token: str | None) -> GraphQLClient:
        return GraphQLClient(self.http, token)


@pytest.fixture(scope="session")
def http(server_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server_url, timeout=60) as session:
        yield session


@pytest.fixture
def anonymous(http: httpx.Client) -> GraphQLClient:
    return GraphQLClient(http)


@dataclass
class Api:
    """Clients for any caller: ``api.as_(employee)``, ``api.platform``."""

    http: httpx.Client
    settings: ApiSettings

    def token(self, employee: Employee) -> str:
        return issue_token(self.settings, subject=employee.emp_id, org_id=employee.org_id, role=employee.role.value)

    def as_(self, employee: Employee) -> GraphQLClient:
        return GraphQLClient(self.http, self.token(employee))

    @property
    def platform(self) -> GraphQLClient:
        return GraphQLClient(self.http, issue_token(self.settings, subject="operator", org_id=None, role=PLATFORM_ROLE))

    def admin_of(self, tenant: Tenant) -> GraphQLClient:
        return self.as_(tenant.admin)


@pytest.fixture
def api(http: httpx.Client, api_settings: ApiSettings) -> Api:
    return Api(http, api_settings)


@dataclass(frozen=True)
class Demo:
    """The demo organisations (datastore/dev/demo.py), loaded once into the session's table."""

    people: dict[str, Employee]

    def person(self, email: str) -> Employee:
        return self.people[email]


@pytest.fixture(scope="session")
def demo(dynamo: AsyncDynamo, table_name: str) -> Demo:
    return load_demo(dynamo, table_name)


def load_demo(dynamo: AsyncDynamo, table_name: str) -> Demo:
    """The demo organisations in ``table_name`` (loaded unless they are there), and their people."""
    from datastore.dev import demo as demo_data
    from datastore.signin import identities
    from datastore.table.scoped import Table
    from datastore.tenancy.scope import PlatformScope, SignInScope, TenantScope
    from datastore.tenants import employees

    platform = Table(dynamo, table_name, PlatformScope())
    run(demo_data.load(platform))
    sign_in = platform.with_scope(SignInScope())
    people: dict[str, Employee] = {}
    emails = [demo_data.ACME_ADMIN, demo_data.GLOBEX_ADMIN]
    emails += [p[0] for p in demo_data.ACME_PEOPLE + demo_data.GLOBEX_PEOPLE]
    for email in emails:
        identity = run(identities.find_identity(sign_in, email))
        assert identity is not None, email
        employee = run(employees.get_employee(platform.with_scope(TenantScope(identity.org_id)), identity.emp_id))
        assert employee is not None
        people[email] = employee
    return Demo(people)
