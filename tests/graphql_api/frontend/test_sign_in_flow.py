"""The front-end guide's sign-in sequence, step by step: against a JWKS served over HTTP, and in
Chromium at a real provider.

ID token from the provider -> POST /auth/token -> the API with the access token; when that
expires the API answers 401 UNAUTHENTICATED and the front end exchanges a fresh ID token.
Tokens shaped like the providers' the README names show what their claims mean here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from graphql_api.app import create_app
from graphql_api.auth.signin import GRANT_TYPE, ID_TOKEN_TYPE, REFUSED
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api import idp
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.graphiql.chromium import Chromium, Page
from tests.graphql_api.live import serving
from tests.graphql_api.oidc import REDIRECT_URI, CodeFlow, running_provider
from tests.paths import ARTIFACTS

SPA_ORIGIN = "https://hr.example.test"


@pytest.fixture(scope="module")
def sso(new_datastore: DatastoreFactory, table_name: str) -> Iterator[httpx.Client]:
    with idp.serving_jwks(idp.RSA, idp.EC) as jwks:
        settings = ApiSettings.from_env(
            {
                "HR_ENV": "test",
                "ALLOWED_HOSTS": "127.0.0.1",
                "JWT_SECRET": TEST_SECRET,
                "OIDC_ISSUER": idp.ISSUER,
                "OIDC_AUDIENCE": idp.CLIENT_ID,
                "OIDC_JWKS": jwks.url,
                "CORS_ORIGINS": SPA_ORIGIN,
            }
        )
        with serving(create_app(new_datastore(table_name), settings)) as http:
            yield http


def exchange(http: httpx.Client, id_token: str) -> httpx.Response:
    form = {"grant_type": GRANT_TYPE, "subject_token_type": ID_TOKEN_TYPE, "subject_token": id_token}
    return http.post("/auth/token", data=form)


def me(http: httpx.Client, access_token: str) -> httpx.Response:
    return http.post(
        "/graphql", json={"query": "{ me { email role } }"}, headers={"Authorization": f"Bearer {access_token}"}
    )


def expired(access_token: str) -> str:
    """The same access token as it will be once ``expires_in`` has passed."""
    claims: dict[str, Any] = jwt.decode(access_token, TEST_SECRET, algorithms=["HS256"])
    claims["exp"] = int(time.time()) - 60
    return jwt.encode(claims, TEST_SECRET, algorithm="HS256")


def test_sequence__exchange_then_api_then_expiry__401_and_exchange_again(sso: httpx.Client, tenant: Tenant) -> None:
    granted = exchange(sso, idp.id_token(tenant.admin.email))
    assert granted.status_code == 200, granted.text
    body = granted.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 900  # ACCESS_TOKEN_TTL_SECONDS' default
    assert me(sso, body["access_token"]).json()["data"] == {"me": {"email": tenant.admin.email, "role": "ADMIN"}}

    stale = me(sso, expired(body["access_token"]))
    assert stale.status_code == 401
    assert stale.headers["www-authenticate"] == "Bearer"
    assert [error["extensions"]["code"] for error in stale.json()["errors"]] == ["UNAUTHENTICATED"]

    again = exchange(sso, idp.id_token(tenant.admin.email))
    assert me(sso, again.json()["access_token"]).json()["data"]["me"]["email"] == tenant.admin.email


def test_sequence__id_token_sent_to_the_api__401(sso: httpx.Client, tenant: Tenant) -> None:
    """The provider's ID token is not an access token: it must be exchanged first."""
    response = me(sso, idp.id_token(tenant.admin.email))
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


def test_provider_shape__cognito_groups_claim__ignored_role_from_record(sso: httpx.Client, tenant: Tenant) -> None:
    employee = tenant.employee()
    token = idp.id_token(
        employee.email,
        token_use="id",
        **{"cognito:username": "someone", "cognito:groups": ["admin"], "custom:role": "admin"},
    )
    response = exchange(sso, token)
    assert response.status_code == 200, response.text
    assert me(sso, response.json()["access_token"]).json()["data"]["me"]["role"] == "EMPLOYEE"


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"email_verified": None, "xms_edov": True, "tid": "a-tenant"}, id="entra-id-no-email_verified"),
        pytest.param({"email_verified": "true"}, id="email_verified-a-string"),
    ],
)
def test_provider_shape__email_not_verified_true__invalid_grant(
    sso: httpx.Client, tenant: Tenant, overrides: dict[str, Any]
) -> None:
    response = exchange(sso, idp.id_token(tenant.admin.email, **overrides))
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_grant", "error_description": REFUSED}


@pytest.mark.parametrize(
    ("path", "headers"), [("/auth/token", "content-type"), ("/graphql", "authorization, content-type")]
)
def test_cors__spa_origin_in_cors_origins__preflight_allowed(sso: httpx.Client, path: str, headers: str) -> None:
    response = sso.options(
        path,
        headers={
            "Origin": SPA_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": headers,
        },
    )
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == SPA_ORIGIN


# --- in a browser, through a real provider ----------------------------------------------------


def test_browser__chromium_signs_in_at_a_real_provider_then_the_api(
    new_datastore: DatastoreFactory, table_name: str, tenant: Tenant, tmp_path: Path
) -> None:
    """Chromium runs the provider's login and consent pages (panva's oidc-provider, the
    platform's provider here) with real clicks and comes back to the app's redirect URI with
    the code; the app's part (PKCE verifier, token endpoint, /auth/token) runs as the app would."""
    with running_provider(tmp_path / "idp", {"ada": tenant.admin.email}) as provider:
        settings = ApiSettings.from_env(
            {
                "HR_ENV": "test",
                "ALLOWED_HOSTS": "127.0.0.1",
                "JWT_SECRET": TEST_SECRET,
                "OIDC_ISSUER": provider.issuer,
                "OIDC_AUDIENCE": provider.client_id,
                "OIDC_JWKS": f"{provider.issuer}/jwks",
            }
        )
        with serving(create_app(new_datastore(table_name), settings)) as http:
            where = http.get("/auth/discovery", params={"email": tenant.admin.email}).json()
            flow = CodeFlow.from_discovery(where)
            request = flow.authorization_request()
            with Chromium() as browser:
                page = browser.page()
                try:
                    page.open(request.url)
                    page.wait_for("document.querySelector('input[name=login]') !== null")
                    page.evaluate("document.querySelector('input[name=login]').value = 'ada'")
                    page.evaluate("document.querySelector('input[name=password]').value = 'any'")
                    page.click("button[type=submit]")
                    page.wait_for("document.querySelector('input[name=prompt][value=consent]') !== null")
                    page.click("button[type=submit]")
                    came_back = _redirected_to_the_app(page)
                finally:
                    page.screenshot(ARTIFACTS / "sign-in-at-provider.png")
            id_token = flow.redeem(came_back, request)
            body = exchange(http, id_token).json()
            assert me(http, body["access_token"]).json()["data"] == {
                "me": {"email": tenant.admin.email, "role": "ADMIN"}
            }
            refreshed = http.post(
                "/auth/token", data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"]}
            )
            assert refreshed.status_code == 200, refreshed.text


def _redirected_to_the_app(page: Page) -> str:
    """The URL the provider sent the browser back to (the app's redirect URI, with the code);
    nothing listens there, so it is read off the browser's requests, not its location."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page.evaluate("1")  # takes in the events the browser sent meanwhile
        found = [url for url in page.requested_urls() if url.startswith(REDIRECT_URI)]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"never sent back to {REDIRECT_URI}: {page.requested_urls()}")
