"""Persisted documents over HTTP: Apollo APQ (shared through DynamoDB), trusted documents, the parse cache."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from starlette.applications import Starlette

from datastore import documents
from datastore.scope import DocumentScope
from datastore.store import Datastore
from datastore.table import Table
from graphql_api.app import create_app
from graphql_api.config import ApiSettings
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def apq(text: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha256(text)}}


def unique(name: str) -> str:
    """A document no earlier test registered (the table outlives the test)."""
    return f"query {name}{sha256(str(id(object())) + name)[:8]} {{ __typename }}"


@pytest.fixture(scope="module")
def apps(
    client: DynamoDBClient, table_name: str, api_settings: ApiSettings
) -> Iterator[list[tuple[Starlette, httpx.Client]]]:
    """Two server processes' worth of app on one table: each has its own in-memory caches."""
    first = create_app(Datastore(client, table_name), api_settings)
    second = create_app(Datastore(client, table_name), api_settings)
    with serving(first) as one, serving(second) as two:
        yield [(first, one), (second, two)]


@pytest.fixture
def one(apps: list[tuple[Starlette, httpx.Client]]) -> httpx.Client:
    return apps[0][1]


@pytest.fixture
def two(apps: list[tuple[Starlette, httpx.Client]]) -> httpx.Client:
    return apps[1][1]


# --- automatic persisted queries ----------------------------------------------------------------


def test_apq__unknown_hash__200_persisted_query_not_found(one: httpx.Client) -> None:
    response = one.post("/graphql", json={"extensions": apq(unique("Unknown"))})
    assert response.status_code == 200
    error = response.json()["errors"][0]
    assert error["message"] == "PersistedQueryNotFound"
    assert error["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"


def test_apq__hash_and_query__runs_and_every_process_finds_it(
    one: httpx.Client, two: httpx.Client, client: DynamoDBClient, table_name: str
) -> None:
    text = unique("Shared")
    registered = one.post("/graphql", json={"query": text, "extensions": apq(text)})
    assert registered.json()["data"] == {"__typename": "Query"}
    assert documents.get_document(Table(client, table_name, DocumentScope()), sha256(text)) == text
    by_hash = two.post("/graphql", json={"extensions": apq(text)})  # another process, cold cache
    assert by_hash.json()["data"] == {"__typename": "Query"}


def test_apq__hash_only_get__as_apollo_sends_it(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    name = f"Me{sha256(tenant.org_id)[:6]}"
    departments = "organization { departments(first: $first) { edges { node { name } } } }"
    text = f"query {name}($first: Int) {{ me {{ email }} {departments} }}"
    headers = {"Authorization": f"Bearer {api.token(tenant.admin)}"}
    params = {"extensions": json.dumps(apq(text)), "variables": json.dumps({"first": 1}), "operationName": name}
    assert (
        one.get("/graphql", params=params, headers=headers).json()["errors"][0]["message"] == "PersistedQueryNotFound"
    )
    registered = one.post(
        "/graphql", json={"query": text, "extensions": apq(text), "variables": {"first": 1}}, headers=headers
    )
    assert "errors" not in registered.json(), registered.text
    response = one.get("/graphql", params=params, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["me"] == {"email": tenant.admin.email}


def test_apq__hash_does_not_match__400_and_nothing_stored(
    one: httpx.Client, client: DynamoDBClient, table_name: str
) -> None:
    text = unique("Mismatch")
    response = one.post("/graphql", json={"query": text, "extensions": apq(text + " ")})
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_HASH_MISMATCH"
    assert documents.get_document(Table(client, table_name, DocumentScope()), sha256(text + " ")) is None


def test_apq__invalid_document__not_stored(one: httpx.Client, client: DynamoDBClient, table_name: str) -> None:
    text = "{ noSuchField }"
    response = one.post("/graphql", json={"query": text, "extensions": apq(text)})
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert documents.get_document(Table(client, table_name, DocumentScope()), sha256(text)) is None


@pytest.mark.parametrize(
    ("persisted", "code"),
    [
        ({"version": 2, "sha256Hash": "0" * 64}, "PERSISTED_QUERY_NOT_SUPPORTED"),
        ({"version": 1, "sha256Hash": "not-a-hash"}, "BAD_REQUEST"),
        ({"version": 1}, "BAD_REQUEST"),
        ("a string", "BAD_REQUEST"),
    ],
)
def test_apq__malformed__400_with_code(one: httpx.Client, persisted: object, code: str) -> None:
    response = one.post("/graphql", json={"extensions": {"persistedQuery": persisted}})
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == code


def test_apq__mutation_by_hash_over_get__405(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    text = f'mutation M{sha256(tenant.org_id)[:6]} {{ createDepartment(input: {{name: "By hash"}}) {{ __typename }} }}'
    headers = {"Authorization": f"Bearer {api.token(tenant.admin)}"}
    one.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=headers)
    response = one.get("/graphql", params={"extensions": json.dumps(apq(text))}, headers=headers)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


# --- the parse cache ----------------------------------------------------------------------------------


def test_document_cache__repeated_document__parsed_once(apps: list[tuple[Starlette, httpx.Client]]) -> None:
    app, http = apps[0]
    text = unique("Cached")
    before = app.state.document_cache.parses
    for _ in range(3):
        assert http.post("/graphql", json={"query": text}).json()["data"] == {"__typename": "Query"}
    assert app.state.document_cache.parses == before + 1


def test_document_cache__invalid_document__parsed_every_time(apps: list[tuple[Starlette, httpx.Client]]) -> None:
    app, http = apps[0]
    before = app.state.document_cache.parses
    for _ in range(2):
        assert "errors" in http.post("/graphql", json={"query": "{ alsoNoSuchField }"}).json()
    assert app.state.document_cache.parses == before + 2


def test_document_cache__cached_document__limits_still_hold(
    apps: list[tuple[Starlette, httpx.Client]], api: Api, tenant: Tenant
) -> None:
    _app, http = apps[0]
    text = "query Cost($n: Int) { organization { departments(first: $n) { edges { node { name } } } } }"
    headers = {"Authorization": f"Bearer {api.token(tenant.admin)}"}
    assert "errors" not in http.post("/graphql", json={"query": text, "variables": {"n": 2}}, headers=headers).json()
    refused = http.post("/graphql", json={"query": text, "variables": {"n": 10**6}}, headers=headers).json()
    assert refused["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


# --- trusted documents --------------------------------------------------------------------------------

TRUSTED_QUERY = "query Trusted { __typename }"
TRUSTED_ID = sha256(TRUSTED_QUERY)


@pytest.fixture(scope="module")
def trusted(
    client: DynamoDBClient, table_name: str, api_settings: ApiSettings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Starlette, httpx.Client]]:
    manifest = Path(tmp_path_factory.mktemp("trusted")) / "persisted-documents.json"
    manifest.write_text(json.dumps({TRUSTED_ID: TRUSTED_QUERY, "relay-id-7": "query Relay { __typename }"}))
    app = create_app(Datastore(client, table_name), with_settings(api_settings, trusted_documents=str(manifest)))
    with serving(app) as http:
        yield app, http


@pytest.mark.parametrize(
    "body",
    [
        {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": TRUSTED_ID}}},
        {"documentId": TRUSTED_ID},
        {"documentId": f"sha256:{TRUSTED_ID}"},  # the client preset's form of the same SHA-256 id
        {"documentId": "relay-id-7"},
        {"query": TRUSTED_QUERY},
    ],
)
def test_trusted__manifest_document__runs(trusted: tuple[Starlette, httpx.Client], body: dict[str, Any]) -> None:
    response = trusted[1].post("/graphql", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["data"] == {"__typename": "Query"}


def test_trusted__by_id_over_get__runs(trusted: tuple[Starlette, httpx.Client]) -> None:
    response = trusted[1].get("/graphql", params={"documentId": TRUSTED_ID})
    assert response.json()["data"] == {"__typename": "Query"}


@pytest.mark.parametrize(
    "body",
    [
        {"query": "{ __typename }"},
        {"query": "{ this is not even graphql"},
        {"documentId": "0" * 64},
        {"query": unique("Registering"), "extensions": apq(unique("Registering"))},
        {"documentId": TRUSTED_ID, "query": "{ __typename }"},
        {},
    ],
)
def test_trusted__anything_else__400_before_parsing(
    trusted: tuple[Starlette, httpx.Client], body: dict[str, Any]
) -> None:
    app, http = trusted
    before = app.state.document_cache.parses
    response = http.post("/graphql", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_REQUIRED"
    assert app.state.document_cache.parses == before


def test_trusted__manifest_unreadable__refused_at_start(
    client: DynamoDBClient, table_name: str, api_settings: ApiSettings, tmp_path: Path
) -> None:
    from datastore.config import ConfigError

    bad = tmp_path / "manifest.json"
    bad.write_text('["not", "an", "object"]')
    for path in (bad, tmp_path / "missing.json"):
        with pytest.raises(ConfigError, match="TRUSTED_DOCUMENTS"):
            create_app(Datastore(client, table_name), with_settings(api_settings, trusted_documents=str(path)))
