"""The authentication backend: one verdict for HTTP and WebSocket, and the 401 it answers."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from starlette.authentication import AuthenticationError
from starlette.requests import HTTPConnection

from datastore.kinds.entities import Role
from graphql_api.auth.backend import BearerTokenBackend
from graphql_api.auth.jwks import JwksKeys
from graphql_api.auth.tokens import TokenVerifier, issue_token
from graphql_api.request.blocking import BlockingRunner
from graphql_api.request.principal import PrincipalUser, principal_of
from graphql_api.settings.api import ApiSettings
from tests.conftest import Tenant
from tests.graphql_api.auth.test_tokens import AUDIENCE, ISSUER, RSA_KEY, claims_of, jwk
from tests.graphql_api.fixtures import TEST_SECRET

# The I/O pool the app would give the backend (app.py: services.run_blocking).
POOL = ThreadPoolExecutor(2, thread_name_prefix="test-io")


def connection(kind: str, authorization: str | None) -> HTTPConnection:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return HTTPConnection({"type": kind, "path": "/graphql", "headers": headers, "query_string": b""})


@pytest.mark.parametrize("kind", ["http", "websocket"])
def test_backend__valid_token__same_principal_for_http_and_websocket(
    api_settings: ApiSettings, tenant: Tenant, kind: str
) -> None:
    backend = BearerTokenBackend(TokenVerifier(api_settings), BlockingRunner(POOL))
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
    backend = BearerTokenBackend(TokenVerifier(api_settings), BlockingRunner(POOL))
    assert asyncio.run(backend.authenticate(connection(kind, None))) is None
    assert principal_of(connection(kind, None)) is None


@pytest.mark.parametrize("kind", ["http", "websocket"])
@pytest.mark.parametrize("authorization", ["Bearer not-a-token", "Basic dXNlcjpwYXNz", "Bearer "])
def test_backend__bad_token__authentication_error(api_settings: ApiSettings, kind: str, authorization: str) -> None:
    backend = BearerTokenBackend(TokenVerifier(api_settings), BlockingRunner(POOL))
    with pytest.raises(AuthenticationError):
        asyncio.run(backend.authenticate(connection(kind, authorization)))


def test_middleware__bad_token__401_graphql_error_with_bearer_challenge(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ me { email } }"}, headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    body = response.json()
    assert [error["extensions"] for error in body["errors"]] == [{"code": "UNAUTHENTICATED", "reason": "TOKEN_INVALID"}]
    assert body["errors"][0]["message"] == "invalid token: it is not a well-formed JWT"


def test_middleware__anonymous__reaches_graphql_and_is_unauthenticated(http: httpx.Client) -> None:
    body = http.post("/graphql", json={"query": "{ me { email } }"}).json()
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


class RecordingKeys(JwksKeys):
    """A JWKS file whose lookups note the thread they ran on."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.threads: list[str] = []

    def lookup(self, kid: str) -> Any:
        self.threads.append(threading.current_thread().name)
        return super().lookup(kid)


def test_backend__jwks_token__verified_on_the_io_pool_it_was_given(tmp_path: Path, tenant: Tenant) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(RSA_KEY, "rsa-1", "RS256")]}))
    settings = ApiSettings.from_env(
        {"HR_ENV": "test", "JWT_SECRET": TEST_SECRET, "JWKS": str(path), "JWT_ISSUER": ISSUER, "JWT_AUDIENCE": AUDIENCE}
    )
    keys = RecordingKeys(str(path))
    with ThreadPoolExecutor(1, thread_name_prefix="given-io") as pool:
        backend = BearerTokenBackend(TokenVerifier(settings, keys), BlockingRunner(pool))
        token = jwt.encode(claims_of(tenant), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
        result = asyncio.run(backend.authenticate(connection("http", f"Bearer {token}")))

    assert result is not None
    assert keys.threads == ["given-io_0"]  # not asyncio's default pool, nor the event loop
