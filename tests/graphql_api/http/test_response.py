"""GraphQL over HTTP: media types and status codes, 401 for every UNAUTHENTICATED, and response headers."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from aiodynamo.http.types import Request
from graphql import GraphQLError
from strawberry.types import ExecutionResult

from datastore.aws.client import AsyncDynamo
from datastore.config import DatastoreSettings
from datastore.table.store import Datastore
from datastore.tenants import employees
from graphql_api.app import create_app
from graphql_api.http import response as http_response
from graphql_api.http.errors import TransportError
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant
from tests.datastore import faults
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.live import serving, with_settings
from tests.tcp_proxy import Mode, TcpProxy

GRAPHQL_RESPONSE = "application/graphql-response+json"


# --- media type and status ---------------------------------------------------------------


def test_accept_graphql_response_json__valid__200_with_that_type(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ __typename }"}, headers={"Accept": GRAPHQL_RESPONSE})
    assert response.status_code == 200
    assert response.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
    assert response.json()["data"] == {"__typename": "Query"}


@pytest.mark.parametrize(
    ("document", "code"), [("{ __typename", "GRAPHQL_PARSE_FAILED"), ("{ noSuchField }", "GRAPHQL_VALIDATION_FAILED")]
)
def test_accept_graphql_response_json__parse_or_validation_error__400_without_data(
    http: httpx.Client, document: str, code: str
) -> None:
    response = http.post("/graphql", json={"query": document}, headers={"Accept": GRAPHQL_RESPONSE})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    body = response.json()
    assert "data" not in body
    assert body["errors"][0]["extensions"]["code"] == code


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


@pytest.mark.parametrize(
    ("accept", "chosen"),
    [
        # urql's for a query, then for a subscription (fetchSubscriptions): the first listed wins.
        (
            f"{GRAPHQL_RESPONSE}, application/graphql+json, application/json, text/event-stream, multipart/mixed",
            GRAPHQL_RESPONSE,
        ),
        ("text/event-stream, multipart/mixed", "text/event-stream"),
        ("multipart/mixed, text/event-stream", "multipart/mixed"),
        # graphql-sse's, and Apollo's HttpLink's for a subscription.
        ("text/event-stream", "text/event-stream"),
        ('multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/json', http_response.APOLLO_MULTIPART),
        ('multipart/mixed;subscriptionSpec="1.0"', http_response.APOLLO_MULTIPART),
        # Quality before order; a wildcard never chooses a stream.
        ("text/event-stream;q=0.5, application/json", "application/json"),
        ("application/json;q=0.5, text/event-stream", "text/event-stream"),
        ("text/html,application/xhtml+xml,*/*;q=0.8", "application/json"),
        ("text/*", None),
        ("text/event-stream;q=0", None),
    ],
)
def test_negotiate__json_or_a_stream(accept: str, chosen: str | None) -> None:
    if chosen is None:
        with pytest.raises(TransportError) as refused:
            http_response.negotiate(accept)
        assert refused.value.status == 406
    else:
        assert http_response.negotiate(accept) == chosen


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
    run(employees.terminate_employee(tenant.table, employee.emp_id))
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
def browser_facing(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> Iterator[httpx.Client]:
    settings = with_settings(api_settings, cors_origins=("https://app.example.com",))
    with serving(create_app(new_datastore(table_name), settings)) as session:
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


# --- an outage is a 5xx when it left no data -----------------------------------------------


@pytest.fixture(scope="module")
def outage(dynamodb_endpoint: str, settings: DatastoreSettings, api_settings: ApiSettings) -> Iterator[Outage]:
    """A server whose DynamoDB traffic passes a TCP proxy (tests/tcp_proxy.py) that can drop it."""
    upstream = httpx.URL(dynamodb_endpoint).port
    assert upstream is not None
    with TcpProxy(upstream) as proxy:
        # No change feed (nor webhook dispatcher, which only a feed's reader runs): the calls
        # through the proxy are the requests' alone.
        datastore = replace(Datastore.connect(replace(settings, endpoint_url=proxy.endpoint_url)), feed=None)
        with serving(create_app(datastore, api_settings)) as http:
            yield Outage(Api(http, api_settings), proxy, datastore.aio)
        datastore.close()


@dataclass(frozen=True)
class Outage:
    api: Api
    proxy: TcpProxy
    # The server's data plane client (its own: the proxy's endpoint is its settings' alone).
    dynamo: AsyncDynamo

    def post_then_drop(self, client: GraphQLClient, document: str, accept: str) -> httpx.Response:
        """``document`` sent with DynamoDB reachable for its first call and dropped after it."""

        sent = 0

        async def drop_after_first(request: Request) -> None:
            # The read path's calls run on the event loop: the second one, and any after it,
            # go out while the proxy drops them.
            nonlocal sent
            sent += 1
            if sent > 1:
                self.proxy.mode = Mode.DROP

        try:
            with faults.on_send(self.dynamo, drop_after_first):
                headers = {"Accept": accept, "Authorization": f"Bearer {client.token}"}
                return client.http.post("/graphql", json={"query": document}, headers=headers)
        finally:
            self.proxy.mode = Mode.PASS

    def post(self, client: GraphQLClient, document: str, accept: str) -> httpx.Response:
        """``document`` sent while every connection to DynamoDB is dropped."""
        headers = {"Accept": accept, "Authorization": f"Bearer {client.token}"}
        self.proxy.mode = Mode.DROP
        try:
            return client.http.post("/graphql", json={"query": document}, headers=headers)
        finally:
            self.proxy.mode = Mode.PASS


def codes(response: httpx.Response) -> list[str]:
    return [error["extensions"]["code"] for error in response.json()["errors"]]


@pytest.mark.parametrize("accept", ["application/json", GRAPHQL_RESPONSE])
def test_dynamodb_down__tenant_query__503_retry_after_and_no_data(outage: Outage, tenant: Tenant, accept: str) -> None:
    admin = outage.api.admin_of(tenant)
    assert admin.post("{ me { email } }").status_code == 200  # through the proxy, passing

    response = outage.post(admin, "{ me { email } }", accept)

    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1"
    assert response.headers["content-type"].startswith(accept)
    assert response.json().get("data") is None
    assert codes(response) == ["UNAVAILABLE"]
    assert response.json()["errors"][0]["extensions"]["retryable"] is True


@pytest.mark.parametrize("accept", ["application/json", GRAPHQL_RESPONSE])
def test_dynamodb_down__non_null_root_field__503_with_data_null(outage: Outage, accept: str) -> None:
    """``organizations`` is non-null: its error nulls the whole data entry."""
    response = outage.post(outage.api.platform, "{ organizations { edges { node { name } } } }", accept)

    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1"
    body = response.json()
    assert "data" in body
    assert body["data"] is None
    assert codes(response) == ["UNAVAILABLE"]


@pytest.mark.parametrize("accept", ["application/json", GRAPHQL_RESPONSE])
def test_dynamodb_down__partial_data__200(outage: Outage, tenant: Tenant, accept: str) -> None:
    """Data that is not null must be 200 (the draft's MUST): the outage shows in the metrics."""
    employee = tenant.employee(tenant.department())
    # The employee's item is read first (with the active check); its department after it.
    response = outage.post_then_drop(outage.api.as_(employee), "{ me { email department { name } } }", accept)

    assert response.status_code == 200, response.text
    assert "retry-after" not in response.headers
    assert response.json()["data"] == {"me": {"email": employee.email, "department": None}}
    assert codes(response) == ["UNAVAILABLE"]


def result_with(data: dict[str, Any] | None, *codes: str) -> ExecutionResult:
    errors = [GraphQLError("x", path=["f"], extensions={"code": code}) for code in codes]
    return ExecutionResult(data=data, errors=errors)


@pytest.mark.parametrize("media_type", [http_response.JSON, http_response.GRAPHQL_RESPONSE_JSON])
def test_status_of__outage_codes_without_data__5xx_and_never_with_data(media_type: str) -> None:
    def status(result: ExecutionResult, *, batch: bool = False) -> int:
        return http_response.status_of(media_type, [result], batch=batch)

    assert status(result_with(None, "UNAVAILABLE")) == 503
    assert status(result_with(None, "TIMEOUT")) == 504
    assert status(result_with(None, "NOT_FOUND", "UNAVAILABLE")) == 503
    assert status(result_with({"f": None}, "UNAVAILABLE")) == 200  # data: the draft's MUST 2xx
    assert status(result_with({"f": None}, "TIMEOUT")) == 200
    assert status(result_with(None, "FORBIDDEN")) == 200
    assert status(result_with(None, "UNAVAILABLE"), batch=True) == 200  # other operations may have run
