"""GET /dev/tokens: only in development; tokens for every demo person and a platform operator."""

from __future__ import annotations

import httpx
import jwt

from graphql_api.graphiql.sign_in import DEMO_EMAILS
from graphql_api.settings.api import ApiSettings
from tests.graphql_api.fixtures import Demo


def test_dev_tokens__outside_development__404(http: httpx.Client, api_settings: ApiSettings) -> None:
    assert api_settings.graphiql and not api_settings.development
    assert http.get("/dev/tokens").status_code == 404


def test_dev_tokens__development__every_demo_person_and_the_operator(
    development: httpx.Client, development_settings: ApiSettings, demo: Demo
) -> None:
    response = development.get("/dev/tokens")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    users = response.json()["users"]
    assert [user["email"] for user in users] == [*DEMO_EMAILS, None]
    assert "alice@acme.co" in users[0]["label"]
    assert users[-1]["label"] == "Platform operator"
    claims = jwt.decode(users[-1]["token"], development_settings.jwt_secret, algorithms=["HS256"])
    assert claims["role"] == "platform" and "org" not in claims
    for user in users[:-1]:
        person = demo.person(user["email"])
        claims = jwt.decode(user["token"], development_settings.jwt_secret, algorithms=["HS256"])
        assert (claims["sub"], claims["org"], claims["role"]) == (person.emp_id, person.org_id, person.role.value)


def test_dev_tokens__alice__signs_in_as_alice(development: httpx.Client) -> None:
    alice = development.get("/dev/tokens").json()["users"][0]
    body = development.post(
        "/graphql", json={"query": "{ me { email } }"}, headers={"Authorization": f"Bearer {alice['token']}"}
    ).json()
    assert body["data"] == {"me": {"email": "alice@acme.co"}}


def test_dev_tokens__post__405(development: httpx.Client) -> None:
    assert development.post("/dev/tokens").status_code == 405


def test_dev_tokens__dns_rebinding__foreign_host_refused(development: httpx.Client, demo: Demo) -> None:
    """A page on the attacker's name, re-pointed at 127.0.0.1, sends its own name as Host."""
    port = development.base_url.port
    rebound = development.get("/dev/tokens", headers={"Host": f"rebind.attacker.example:{port}"})
    assert rebound.status_code == 400
    assert rebound.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert "token" not in rebound.text
    assert development.get("/dev/tokens", headers={"Host": f"localhost:{port}"}).status_code == 200
