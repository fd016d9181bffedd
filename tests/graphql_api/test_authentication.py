"""The authentication backend: one verdict for HTTP and WebSocket, and the 401 it answers."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.authentication import AuthenticationError
from starlette.requests import HTTPConnection

from datastore.entities import Role
from graphql_api.auth import TokenVerifier, issue_token
from graphql_api.authentication import BearerTokenBackend, PrincipalUser, principal_of
from graphql_api.config import ApiSettings
from tests.conftest import Tenant


def connection(kind: str, authorization: str | None) -> HTTPConnection:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return HTTPConnection({"type": kind, "path": "/graphql", "headers": headers, "query_string": b""})


@pytest.mark.parametrize("kind", ["http", "websocket"])
def test_backend__valid_token__same_principal_for_http_and_websocket(
    api_settings: ApiSettings, tenant: Tenant, kind: str
) -> None:
    backend = BearerTokenBackend(TokenVerifier(api_settings))
    token = issue_token(api_settings, subject=tenant.admin.emp_id, org_id=tenant.org_id, role="admin")
    result = asyncio.run(backend.authenticate(connection(kind, f"Bearer {token}")))
    assert result is not None
    credentials, user = result
    assert isinstance(user, PrincipalUser)
    assert (user.principal.subject, user.principal.org_id, user.principal.role) == (
        tenant.admin.emp_id,
        tenant.org_id,
        Role.ADMIN,
    )
    assert credentials.scopes == ["authenticated", "admin"]


@pytest.mark.parametrize("kind", ["http", "websocket"])
def test_backend__no_token__anonymous(api_settings: ApiSettings, kind: str) -> None:
    backend = BearerTokenBackend(TokenVerifier(api_settings))
    assert asyncio.run(backend.authenticate(connection(kind, None))) is None
    assert principal_of(connection(kind, None)) is None


@pytest.mark.parametrize("kind", ["http", "websocket"])
@pytest.mark.parametrize("authorization", ["Bearer not-a-token", "Basic dXNlcjpwYXNz", "Bearer "])
def test_backend__bad_token__authentication_error(api_settings: ApiSettings, kind: str, authorization: str) -> None:
    backend = BearerTokenBackend(TokenVerifier(api_settings))
    with pytest.raises(AuthenticationError):
        asyncio.run(backend.authenticate(connection(kind, authorization)))


def test_middleware__bad_token__401_graphql_error_with_bearer_challenge(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ me { email } }"}, headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    body = response.json()
    assert [error["extensions"] for error in body["errors"]] == [{"code": "UNAUTHENTICATED"}]
    assert body["errors"][0]["message"].startswith("invalid token")


def test_middleware__anonymous__reaches_graphql_and_is_unauthenticated(http: httpx.Client) -> None:
    body = http.post("/graphql", json={"query": "{ me { email } }"}).json()
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
