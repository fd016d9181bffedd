"""Persisted documents over HTTP: Apollo APQ (per organisation, in DynamoDB), trusted documents, the parse cache."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from datastore.aws import calls
from datastore.aws.calls import CallLog
from datastore.tenancy.scope import TenantScope
from datastore.tenants import employees, persisted_documents
from graphql_api.app import create_app
from graphql_api.limits.tenant_rate import WRITE_WEIGHT
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant, TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.limits.test_limits import fifteen_aliases
from tests.graphql_api.live import serving, with_settings
from tests.graphql_api.observability.logs import captured_lines


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def apq(text: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha256(text)}}


def unique(name: str) -> str:
    """A document no earlier test registered (the table outlives the test)."""
    return f"query {name}{sha256(str(id(object())) + name)[:8]} {{ __typename }}"


def bearer(api: Api, tenant: Tenant) -> dict[str, str]:
    return {"Authorization": f"Bearer {api.token(tenant.admin)}"}


def stored(tenant: Tenant, text: str) -> str | None:
    """The document the tenant's organisation holds under ``text``'s hash, read from DynamoDB."""
    return run(
        persisted_documents.get_document(
            tenant.table.with_scope(TenantScope(tenant.org_id)), tenant.org_id, sha256(text)
        )
    )


def document_writes(log: CallLog) -> list[str]:
    """Partition keys of the persisted-document writes ``log`` saw, of any layout, any organisation."""
    return [
        pk
        for call in log.snapshot()
        if call.operation in ("PutItem", "TransactWriteItems", "BatchWriteItem")
        for pk in call.partition_keys()
        if "#PQ#" in pk or pk.startswith("PQ#")
    ]


@pytest.fixture(scope="module")
def apps(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> Iterator[list[tuple[Starlette, httpx.Client]]]:
    """Two server processes' worth of app on one table: each has its own in-memory caches."""
    first = create_app(new_datastore(table_name), api_settings)
    second = create_app(new_datastore(table_name), api_settings)
    with serving(first) as one, serving(second) as two:
        yield [(first, one), (second, two)]


@pytest.fixture
def one(apps: list[tuple[Starlette, httpx.Client]]) -> httpx.Client:
    return apps[0][1]


@pytest.fixture
def two(apps: list[tuple[Starlette, httpx.Client]]) -> httpx.Client:
    return apps[1][1]


# --- automatic persisted queries ----------------------------------------------------------------


def test_apq__unknown_hash__200_persisted_query_not_found(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    for headers in ({}, bearer(api, tenant)):
        response = one.post("/graphql", json={"extensions": apq(unique("Unknown"))}, headers=headers)
        assert response.status_code == 200
        error = response.json()["errors"][0]
        assert error["message"] == "PersistedQueryNotFound"
        assert error["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"


def test_apq__hash_and_query__runs_stored_for_the_organisation_every_process_finds_it(
    one: httpx.Client, two: httpx.Client, api: Api, tenant: Tenant
) -> None:
    text = unique("Shared")
    registered = one.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=bearer(api, tenant))
    assert registered.json()["data"] == {"__typename": "Query"}
    assert stored(tenant, text) == text
    # Another process, cold cache: found in DynamoDB.
    by_hash = two.post("/graphql", json={"extensions": apq(text)}, headers=bearer(api, tenant))
    assert by_hash.json()["data"] == {"__typename": "Query"}
    assert by_hash.json()["extensions"]["cost"]["requests"] == {"GetItem": 1}


def test_apq__run_by_hash_on_a_later_day__put_again_once_so_last_use_is_recorded(
    one: httpx.Client, two: httpx.Client, api: Api, tenant: Tenant
) -> None:
    """A document registered days ago (written here as the server wrote it then) and run by its
    hash today is put again, once: its expiry moves on and ``registered_at`` says today."""
    text = unique("LastUsed")
    table = tenant.table.with_scope(TenantScope(tenant.org_id))
    days_ago = datetime.now(UTC) - timedelta(days=3)
    run(persisted_documents.put_document(table, tenant.org_id, sha256(text), text, days_ago))
    writes = []
    for client in (one, one, two):  # the second process finds it put today: nothing to do
        with calls.listening() as log:
            response = client.post("/graphql", json={"extensions": apq(text)}, headers=bearer(api, tenant))
        assert response.json()["data"] == {"__typename": "Query"}
        writes.append(len(document_writes(log)))
    assert writes == [1, 0, 0]
    found = run(persisted_documents.find_document(table, tenant.org_id, sha256(text)))
    assert found is not None and persisted_documents.registered_at(found).date() == datetime.now(UTC).date()


def test_apq__hash_only_get__as_apollo_sends_it(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    name = f"Me{sha256(tenant.org_id)[:6]}"
    departments = "organization { departments(first: $first) { edges { node { name } } } }"
    text = f"query {name}($first: Int) {{ me {{ email }} {departments} }}"
    headers = bearer(api, tenant)
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


def test_apq__hash_does_not_match__400_and_nothing_stored(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    text = unique("Mismatch")
    response = one.post("/graphql", json={"query": text, "extensions": apq(text + " ")}, headers=bearer(api, tenant))
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_HASH_MISMATCH"
    assert stored(tenant, text + " ") is None and stored(tenant, text) is None


def test_apq__invalid_document__not_stored(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    text = "{ noSuchField }"
    response = one.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=bearer(api, tenant))
    assert response.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert stored(tenant, text) is None


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
    headers = bearer(api, tenant)
    one.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=headers)
    response = one.get("/graphql", params={"extensions": json.dumps(apq(text))}, headers=headers)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


# --- who may register, and when ------------------------------------------------------------------


@pytest.mark.parametrize("caller", ["anonymous", "platform operator"])
def test_apq__caller_without_an_organisation__text_runs_nothing_stored_hash_never_found(
    one: httpx.Client, api: Api, caller: str
) -> None:
    """Apollo's link keeps working for them: not found, the text, answered; no write at all."""
    headers = {} if caller == "anonymous" else {"Authorization": f"Bearer {api.platform.token}"}
    text = unique("NoOrganisation")
    with calls.listening() as log:
        first = one.post("/graphql", json={"extensions": apq(text)}, headers=headers)
        with_text = one.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=headers)
        again = one.post("/graphql", json={"extensions": apq(text)}, headers=headers)
    assert first.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert with_text.status_code == 200
    assert with_text.json()["data"] == {"__typename": "Query"}
    assert with_text.json()["extensions"]["cost"]["writeCapacityUnits"] == 0
    assert again.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert log.count() == 0  # not a read, not a write: no organisation, no documents


def test_apq__bad_token__401_nothing_stored(one: httpx.Client) -> None:
    text = unique("BadToken")
    with calls.listening() as log:
        response = one.post(
            "/graphql", json={"query": text, "extensions": apq(text)}, headers={"Authorization": "Bearer not-a-token"}
        )
    assert response.status_code == 401
    assert document_writes(log) == []


def test_apq__terminated_employee__401_nothing_stored(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    """A valid token of an employee no longer active: checked before running, as for a mutation."""
    employee = tenant.employee()
    run(employees.terminate_employee(tenant.table, employee.emp_id))
    text = unique("Terminated")
    with calls.listening() as log:
        response = one.post(
            "/graphql",
            json={"query": text, "extensions": apq(text)},
            headers={"Authorization": f"Bearer {api.token(employee)}"},
        )
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert document_writes(log) == []
    assert stored(tenant, text) is None


def test_apq__over_the_cost_limit__refused_nothing_stored(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    text = fifteen_aliases()
    response = one.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=bearer(api, tenant))
    assert response.json()["errors"][0]["extensions"]["limit"] == "cost"
    assert stored(tenant, text) is None


def test_apq__organisation_b__never_finds_organisation_as_document(
    one: httpx.Client, two: httpx.Client, api: Api, tenant: Tenant, make_tenant: TenantFactory
) -> None:
    """Neither from DynamoDB nor from a process's memory of it: B cannot tell that A ran it."""
    other = make_tenant()
    text = unique("OnlyA")
    assert one.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=bearer(api, tenant)).is_success
    assert stored(tenant, text) == text
    for process in (one, two):  # one has it in memory for A, two read it from DynamoDB for A
        assert process.post("/graphql", json={"extensions": apq(text)}, headers=bearer(api, tenant)).json()["data"]
        refused = process.post("/graphql", json={"extensions": apq(text)}, headers=bearer(api, other))
        assert refused.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert stored(other, text) is None


def test_apq__registration__cost_extension_shows_the_write_as_the_access_line_does(
    one: httpx.Client, api: Api, tenant: Tenant
) -> None:
    text = unique("Costed")
    with captured_lines() as captured, calls.listening() as log:
        response = one.post(
            "/graphql",
            json={"query": text, "extensions": apq(text)},
            headers={**bearer(api, tenant), "X-Request-Id": "apq-costed"},
        )
        lines = captured.wait_for_access_line("apq-costed")
    cost = response.json()["extensions"]["cost"]
    (line,) = [line for line in lines if line["logger"] == "hr.access" and line.get("requestId") == "apq-costed"]
    assert cost["requests"]["PutItem"] == 1
    assert cost["writeCapacityUnits"] == 1.0  # a document under 1 kB
    assert (line["dynamodbCalls"], line["rcu"], line["wcu"]) == (
        cost["requestCount"],
        cost["readCapacityUnits"],
        cost["writeCapacityUnits"],
    )
    assert document_writes(log) == [f"ORG#{tenant.org_id}#PQ#{sha256(text)[:3]}"]


def test_apq__over_the_size_bound__runs_nothing_stored(one: httpx.Client, api: Api, tenant: Tenant) -> None:
    padding = " " * persisted_documents.MAX_DOCUMENT_BYTES  # whitespace: no tokens, within the 32 kB body
    text = unique("Large").replace("{ __typename }", "{" + padding + "__typename }")
    with calls.listening() as log:
        response = one.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=bearer(api, tenant))
    assert response.json()["data"] == {"__typename": "Query"}
    assert document_writes(log) == []
    assert stored(tenant, text) is None


# --- charged to the organisation -----------------------------------------------------------------


@pytest.fixture
def small_bucket(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings) -> Iterator[httpx.Client]:
    """A bucket of 5,000 units (the least a bucket may hold: MAX_QUERY_COST) refilling 1 a second."""
    settings = with_settings(api_settings, tenant_cost_per_second=1, tenant_cost_burst=5000)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield http


def test_apq__registration__charged_one_write_then_429_stores_nothing(
    small_bucket: httpx.Client, api: Api, tenant: Tenant
) -> None:
    headers = bearer(api, tenant)
    registrations = 5000 // (WRITE_WEIGHT + 2)  # { me { email } } costs 2, its registration WRITE_WEIGHT
    texts = [unique(f"Charged{i}").replace("__typename", "me { email }") for i in range(registrations + 1)]
    for text in texts[:-1]:
        response = small_bucket.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=headers)
        assert response.status_code == 200, response.text
        assert stored(tenant, text) == text
    last = texts[-1]
    # What is left pays for the text alone, not for storing it.
    assert small_bucket.post("/graphql", json={"query": last}, headers=headers).status_code == 200
    with calls.listening() as log:
        refused = small_bucket.post("/graphql", json={"query": last, "extensions": apq(last)}, headers=headers)
    assert refused.status_code == 429
    assert refused.json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
    assert document_writes(log) == []
    assert stored(tenant, last) is None


@pytest.mark.parametrize(("budget", "kept"), [(1, False), (2, True)])
def test_apq__registration__within_the_call_budget(
    new_datastore: DatastoreFactory,
    table_name: str,
    api_settings: ApiSettings,
    api: Api,
    tenant: Tenant,
    budget: int,
    kept: bool,
) -> None:
    """The active check is one BatchGetItem; the PutItem is the budget's second call."""
    text = unique(f"Budget{budget}")
    settings = with_settings(api_settings, max_dynamodb_calls=budget)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        response = http.post("/graphql", json={"query": text, "extensions": apq(text)}, headers=bearer(api, tenant))
    assert response.json()["data"] == {"__typename": "Query"}  # the query's answer stands either way
    assert response.json()["extensions"]["cost"]["requestCount"] == budget
    assert (stored(tenant, text) == text) is kept


# --- the parse cache ----------------------------------------------------------------------------------


def test_document_cache__repeated_document__parsed_once(apps: list[tuple[Starlette, httpx.Client]]) -> None:
    app, http = apps[0]
    text = unique("Cached")
    before = app.state.documents.parses
    for _ in range(3):
        assert http.post("/graphql", json={"query": text}).json()["data"] == {"__typename": "Query"}
    assert app.state.documents.parses == before + 1


def test_document_cache__invalid_document__parsed_every_time(apps: list[tuple[Starlette, httpx.Client]]) -> None:
    app, http = apps[0]
    before = app.state.documents.parses
    for _ in range(2):
        assert "errors" in http.post("/graphql", json={"query": "{ alsoNoSuchField }"}).json()
    assert app.state.documents.parses == before + 2


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
    new_datastore: DatastoreFactory,
    table_name: str,
    api_settings: ApiSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Starlette, httpx.Client]]:
    manifest = Path(tmp_path_factory.mktemp("trusted")) / "persisted-persisted_documents.json"
    manifest.write_text(json.dumps({TRUSTED_ID: TRUSTED_QUERY, "relay-id-7": "query Relay { __typename }"}))
    app = create_app(new_datastore(table_name), with_settings(api_settings, trusted_documents=str(manifest)))
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
    before = app.state.documents.parses
    response = http.post("/graphql", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_REQUIRED"
    assert app.state.documents.parses == before


def test_trusted__manifest_unreadable__refused_at_start(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tmp_path: Path
) -> None:
    from datastore.config import ConfigError

    bad = tmp_path / "manifest.json"
    bad.write_text('["not", "an", "object"]')
    for path in (bad, tmp_path / "missing.json"):
        with pytest.raises(ConfigError, match="TRUSTED_DOCUMENTS"):
            create_app(new_datastore(table_name), with_settings(api_settings, trusted_documents=str(path)))


# --- trusted documents with developer tools: the roles that bypass the manifest -------------------

INTROSPECTION = "query IntrospectionQuery { __schema { queryType { name } types { name } } }"
CREATE_KEY = "mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret } }"


def trusted_server(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, manifest: Path, **changes: Any
) -> Starlette:
    manifest.write_text(json.dumps({TRUSTED_ID: TRUSTED_QUERY}))
    settings = with_settings(api_settings, trusted_documents=str(manifest), **changes)
    return create_app(new_datastore(table_name), settings)


@pytest.fixture(scope="module")
def admins_bypass(
    new_datastore: DatastoreFactory,
    table_name: str,
    api_settings: ApiSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[httpx.Client]:
    manifest = Path(tmp_path_factory.mktemp("bypass")) / "persisted-persisted_documents.json"
    app = trusted_server(new_datastore, table_name, api_settings, manifest, trusted_documents_bypass_roles=("admin",))
    with serving(app) as http:
        yield http


def as_token(http: httpx.Client, token: str | None, body: dict[str, Any]) -> httpx.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return http.post("/graphql", json=body, headers=headers)


def test_trusted__platform_operator__introspects_and_runs_any_document(
    trusted: tuple[Starlette, httpx.Client], api: Api
) -> None:
    """GraphiQL's way in: platform operators bypass the manifest by default (INTROSPECTION on)."""
    operator = api.platform.token
    schema = as_token(trusted[1], operator, {"query": INTROSPECTION})
    assert schema.status_code == 200, schema.text
    assert schema.json()["data"]["__schema"]["queryType"] == {"name": "Query"}
    listing = as_token(trusted[1], operator, {"query": "{ organizations(first: 1) { edges { node { name } } } }"})
    assert "errors" not in listing.json(), listing.json()


@pytest.mark.parametrize("caller", ["anonymous", "admin", "employee"])
def test_trusted__anyone_else__introspection_refused(
    trusted: tuple[Starlette, httpx.Client], api: Api, tenant: Tenant, caller: str
) -> None:
    token = {"anonymous": None, "admin": api.token(tenant.admin), "employee": api.token(tenant.employee())}[caller]
    response = as_token(trusted[1], token, {"query": INTROSPECTION})
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_REQUIRED"


def test_trusted__operator_by_an_unlisted_id__still_refused(trusted: tuple[Starlette, httpx.Client], api: Api) -> None:
    """The bypass runs text; an id is looked up in the manifest as for everyone."""
    response = as_token(trusted[1], api.platform.token, {"documentId": "0" * 64})
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_REQUIRED"


def test_trusted__configured_role__bypasses__others_and_its_api_keys_do_not(
    admins_bypass: httpx.Client, api: Api, tenant: Tenant
) -> None:
    admin = as_token(admins_bypass, api.token(tenant.admin), {"query": "{ me { email } }"})
    assert admin.json()["data"] == {"me": {"email": tenant.admin.email}}
    employee = as_token(admins_bypass, api.token(tenant.employee()), {"query": "{ me { email } }"})
    assert employee.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_REQUIRED"
    operator = as_token(admins_bypass, api.platform.token, {"query": INTROSPECTION})
    assert operator.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_REQUIRED"  # not listed now
    # An admin's API key is an integration's, not a person with developer tools.
    secret = api.admin_of(tenant).data(CREATE_KEY, {"input": {"name": "ci", "role": "ADMIN"}})["createApiKey"]["secret"]
    key = as_token(admins_bypass, secret, {"query": "{ organization { name } }"})
    assert key.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_REQUIRED"
    # The manifest's documents still run for everyone.
    assert as_token(admins_bypass, secret, {"documentId": TRUSTED_ID}).json()["data"] == {"__typename": "Query"}
