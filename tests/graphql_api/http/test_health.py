"""/healthz and /readyz: answered before authentication and limits; readiness tells the truth."""

from __future__ import annotations

from dataclasses import replace

import httpx

from datastore.config import DatastoreSettings
from datastore.dev.local import free_port
from datastore.table.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.settings.api import ApiSettings
from tests.graphql_api.live import serving

BAD_HEADERS = {"Authorization": "Bearer not-a-token"}


def test_healthz__malformed_authorization__200_without_io(http: httpx.Client) -> None:
    response = http.get("/healthz", headers=BAD_HEADERS)
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_readyz__dynamodb_up__200_even_with_a_malformed_token(http: httpx.Client) -> None:
    response = http.get("/readyz", headers=BAD_HEADERS)
    assert (response.status_code, response.json()) == (200, {"status": "ok", "dynamodb": True})


def test_graphql__malformed_authorization__still_401(http: httpx.Client) -> None:
    assert http.post("/graphql", json={"query": "{ me { id } }"}, headers=BAD_HEADERS).status_code == 401


def test_readyz__dynamodb_unreachable__503_healthz_200_graphql_unavailable(
    settings: DatastoreSettings, table_name: str, api_settings: ApiSettings
) -> None:
    nowhere = replace(settings, endpoint_url=f"http://127.0.0.1:{free_port()}", table_name=table_name)
    with serving(create_app(Datastore(nowhere), api_settings)) as http:
        ready = http.get("/readyz")
        assert (ready.status_code, ready.json()["dynamodb"]) == (503, False)
        assert http.get("/healthz").status_code == 200
        # A GraphQL request during the outage: coded, retryable, no backend name.
        operator = issue_token(api_settings, subject="operator", org_id=None, role=PLATFORM_ROLE)
        body = http.post(
            "/graphql",
            json={"query": "{ organizations { edges { node { id } } } }"},
            headers={"Authorization": f"Bearer {operator}"},
        ).json()
        [error] = body["errors"]
        assert error["extensions"]["code"] == "UNAVAILABLE"
        assert error["extensions"]["retryable"] is True
        assert "Error" not in error["message"]
