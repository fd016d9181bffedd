"""GraphQL over HTTP: media types and status codes, 401 for every UNAUTHENTICATED, and response headers."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from datastore import employees
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.config import ApiSettings
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings

GRAPHQL_RESPONSE = "application/graphql-response+json"

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


# --- media type and status ---------------------------------------------------------------


def test_accept_graphql_response_json__valid__200_with_that_type(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ __typename }"}, headers={"Accept": GRAPHQL_RESPONSE})
    assert response.status_code == 200
    assert response.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
    assert response.json()["data"] == {"__typename": "Query"}


@pytest.mark.parametrize("document", ["{ __typename", "{ noSuchField }"])
def test_accept_graphql_response_json__parse_or_validation_error__400_without_data(
    http: httpx.Client, document: str
) -> None:
    response = http.post("/graphql", json={"query": document}, headers={"Accept": GRAPHQL_RESPONSE})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    body = response.json()
    assert "data" not in body
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


@pytest.mark.parametrize("accept", [None, "application/json", "*/*"])
def test_legacy_json__validation_error__200(http: httpx.Client, accept: str | None) -> None:
    headers = {} if accept is None else {"Accept": accept}
    request = http.build_request("POST", "/graphql", json={"query": "{ noSuchField }"}, headers=headers)
    if accept is None:
        del request.headers["accept"]
    response = http.send(request)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert "data" not in response.json()


def test_accept_prefers_json_by_quality__json(http: httpx.Client) -> None:
    accept = f"{GRAPHQL_RESPONSE};q=0.5, application/json"
    response = http.post("/graphql", json={"query": "{ __typename }"}, headers={"Accept": accept})
    assert response.headers["content-type"].startswith("application/json")


def test_accept_nothing_we_speak__406_json(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ __typename }"}, headers={"Accept": "text/csv"})
    assert response.status_code == 406
    assert response.json()["errors"][0]["extensions"]["code"] == "NOT_ACCEPTABLE"


def test_field_error__200_with_data(api: Api, tenant: Tenant) -> None:
    response = api.admin_of(tenant).http.post(
        "/graphql",
        json={"query": 'query { department(id: "RGVwYXJ0bWVudDpub3BlCg==") { name } }'},
        headers={"Authorization": f"Bearer {api.token(tenant.admin)}", "Accept": GRAPHQL_RESPONSE},
    )
    assert response.status_code == 200, response.text
    assert "data" in response.json()


# --- UNAUTHENTICATED is 401 ------------------------------------------------------------------


@pytest.mark.parametrize("accept", ["application/json", GRAPHQL_RESPONSE])
def test_terminated_employee__valid_token__401(http: httpx.Client, api: Api, tenant: Tenant, accept: str) -> None:
    employee = tenant.employee()
    headers = {"Authorization": f"Bearer {api.token(employee)}", "Accept": accept}
    assert http.post("/graphql", json={"query": "{ me { email } }"}, headers=headers).status_code == 200
    employees.terminate_employee(tenant.table, employee.emp_id)
    for document in ("{ me { email } }", 'mutation { createDepartment(input: {name: "X"}) { __typename } }'):
        response = http.post("/graphql", json={"query": document}, headers=headers)
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == "Bearer"
        assert [e["extensions"]["code"] for e in response.json()["errors"]] == ["UNAUTHENTICATED"]


def test_anonymous__tenant_field__401(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ me { email } }"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


def test_anonymous__public_field__200(http: httpx.Client) -> None:
    assert http.post("/graphql", json={"query": "{ __typename }"}).status_code == 200


def test_bad_token__401_json(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ __typename }"}, headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


# --- headers -----------------------------------------------------------------------------------


def test_authenticated__cache_control_no_store(api: Api, tenant: Tenant) -> None:
    response = api.admin_of(tenant).post("{ me { email } }")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"


def test_anonymous__no_cache_control(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ __typename }"})
    assert "cache-control" not in response.headers


@pytest.mark.parametrize(
    ("method", "path", "body", "headers"),
    [
        ("POST", "/graphql", b'{"query": "{ __typename }"}', {"Content-Type": "application/json"}),
        ("POST", "/graphql", b"null", {"Content-Type": "application/json"}),
        ("POST", "/graphql", b'{"query": "{ me { email } }"}', {"Content-Type": "application/json"}),
        ("POST", "/graphql", b"{}", {"Content-Type": "application/json", "Authorization": "Bearer bad"}),
        ("POST", "/graphql", b" " * 40_000, {"Content-Type": "application/json"}),
        ("GET", "/healthz", b"", {}),
        ("GET", "/nowhere", b"", {}),
    ],
)
def test_request_id__echoed_on_every_response(
    http: httpx.Client, method: str, path: str, body: bytes, headers: dict[str, str]
) -> None:
    response = http.request(method, path, content=body, headers={**headers, "X-Request-Id": "req-abc.123"})
    assert response.headers["x-request-id"] == "req-abc.123"


@pytest.mark.parametrize("sent", [None, "", "x" * 65, "has space", "caf\u00e9"])
def test_request_id__missing_or_unsafe__a_fresh_ulid(http: httpx.Client, sent: str | None) -> None:
    headers = {} if sent is None else {"X-Request-Id": sent.encode()}
    response = http.post("/graphql", json={"query": "{ __typename }"}, headers=headers)
    assert len(response.headers["x-request-id"]) == 26
    assert response.headers["x-request-id"] != sent


def test_gzip__large_response__compressed(http: httpx.Client) -> None:
    response = http.post(
        "/graphql",
        json={"query": "{ __schema { types { name description } } }"},
        headers={"Accept-Encoding": "gzip"},
    )
    assert response.headers["content-encoding"] == "gzip"
    assert int(response.headers["content-length"]) < len(response.content)  # httpx decoded it
    assert response.json()["data"]["__schema"]["types"]


def test_gzip__raw_bytes_are_gzip(server_url: str) -> None:
    with httpx.Client(base_url=server_url) as raw:
        request = raw.build_request(
            "POST", "/graphql", json={"query": "{ __schema { types { name } } }"}, headers={"Accept-Encoding": "gzip"}
        )
        response = raw.send(request, stream=True)
        compressed = b"".join(response.iter_raw())
        response.close()
    assert compressed[:2] == b"\x1f\x8b"
    # XFL (RFC 1952): 4 is "fastest", what level 1 writes; 2, "maximum", would be level 9.
    assert compressed[8] == 4
    assert b"__schema" in gzip.decompress(compressed)


def test_gzip__small_response__not_compressed(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ __typename }"}, headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in response.headers


@pytest.fixture(scope="module")
def browser_facing(client: DynamoDBClient, table_name: str, api_settings: ApiSettings) -> Iterator[httpx.Client]:
    settings = with_settings(api_settings, cors_origins=("https://app.example.com",))
    with serving(create_app(Datastore(client, table_name), settings)) as session:
        yield session


def test_cors__apollo_client_headers_allowed(browser_facing: httpx.Client) -> None:
    preflight = {
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "apollographql-client-name,apollographql-client-version,content-type",
    }
    response = browser_facing.options("/graphql", headers=preflight)
    assert response.status_code == 200
    allowed = response.headers["access-control-allow-headers"].lower()
    assert "apollographql-client-name" in allowed and "apollographql-client-version" in allowed


def test_cors__request_id_exposed(browser_facing: httpx.Client) -> None:
    response = browser_facing.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"Origin": "https://app.example.com"}
    )
    assert response.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "x-request-id" in response.headers["access-control-expose-headers"].lower()
    assert response.headers["x-request-id"]
