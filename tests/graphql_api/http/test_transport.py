"""GraphQL over HTTP: every transport failure is a JSON GraphQL error with a code, never plain text or a 5xx."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.observability.logs import captured_lines

JSON = {"Content-Type": "application/json"}


def error_of(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].split(";")[0] == "application/json", response.headers
    body = response.json()
    assert "data" not in body, body
    error: dict[str, Any] = body["errors"][0]
    return error


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"",
        b"null",
        b"123",
        b'"a string"',
        b"true",
        b'{"query": 42}',
        b'{"query": "{ __typename }", "variables": []}',
    ],
)
def test_post__malformed_body__400_bad_request(http: httpx.Client, body: bytes) -> None:
    response = http.post("/graphql", content=body, headers=JSON)
    assert response.status_code == 400, response.text
    assert error_of(response)["extensions"]["code"] == "BAD_REQUEST"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1, 2]", "the body must be a JSON object with a query, not an array"),
        (b"[]", "the body must be a JSON object with a query, not an array"),
        (b"null", "the body must be a JSON object with a query, not null"),
        (b"123", "the body must be a JSON object with a query, not a number"),
        (b'"{ __typename }"', "the body must be a JSON object with a query, not a string"),
        (b"true", "the body must be a JSON object with a query, not a boolean"),
        # An array of operations is a batch, which this server (BATCH_MAX_OPERATIONS=0) refuses.
        (b'[{"query": "{ __typename }"}]', "batching is not enabled: send one operation per request"),
    ],
)
def test_post__not_an_object__says_what_it_is(http: httpx.Client, body: bytes, message: str) -> None:
    response = http.post("/graphql", content=body, headers=JSON)
    assert response.status_code == 400, response.text
    assert error_of(response) == {"message": message, "extensions": {"code": "BAD_REQUEST"}}


def test_post__json_nesting_bomb__400_bad_request(http: httpx.Client) -> None:
    bomb = b"[" * 5000 + b"]" * 5000  # inside the body limit, far past the parser's 1024 levels
    response = http.post("/graphql", content=bomb, headers=JSON)
    assert response.status_code == 400, response.text
    assert error_of(response)["extensions"]["code"] == "BAD_REQUEST"


def test_post__nesting_bomb_in_variables__400_bad_request(http: httpx.Client) -> None:
    body = b'{"query": "{ __typename }", "variables": {"a": ' + b"[" * 3000 + b"]" * 3000 + b"}}"
    response = http.post("/graphql", content=body, headers=JSON)
    assert response.status_code == 400, response.text
    assert error_of(response)["extensions"]["code"] == "BAD_REQUEST"


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/graphql",
        "application/json; charset=latin-1",
    ],
)
def test_post__wrong_content_type__415(http: httpx.Client, content_type: str | None) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = http.post("/graphql", content=b'{"query": "{ __typename }"}', headers=headers)
    assert response.status_code == 415, response.text
    assert error_of(response)["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_post__json_with_utf8_charset__accepted(http: httpx.Client) -> None:
    response = http.post(
        "/graphql", content=b'{"query": "{ __typename }"}', headers={"Content-Type": "application/json; charset=utf-8"}
    )
    assert response.status_code == 200
    assert response.json() == {"data": {"__typename": "Query"}, "extensions": response.json().get("extensions")}


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_other_methods__405_with_allow(http: httpx.Client, method: str) -> None:
    response = http.request(method, "/graphql", content=b'{"query": "{ __typename }"}', headers=JSON)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"
    assert error_of(response)["extensions"]["code"] == "METHOD_NOT_ALLOWED"


def test_body_over_limit__413_json_with_code(http: httpx.Client) -> None:
    response = http.post("/graphql", content=b" " * 40_000, headers=JSON)  # past MAX_BODY_BYTES (32 kB)
    assert response.status_code == 413
    assert error_of(response)["extensions"]["limit"] == "bodySize"
    assert response.headers["x-request-id"]


def test_get__bad_variables_json__400(http: httpx.Client) -> None:
    response = http.get("/graphql", params={"query": "{ __typename }", "variables": "{oops"})
    assert response.status_code == 400
    assert error_of(response)["extensions"]["code"] == "BAD_REQUEST"


def test_get__no_query__400(http: httpx.Client) -> None:
    response = http.get("/graphql", headers={"Accept": "application/json"})
    assert response.status_code == 400
    assert error_of(response)["extensions"]["code"] == "BAD_REQUEST"


@pytest.mark.parametrize(("accept", "status"), [("application/json", 200), ("application/graphql-response+json", 400)])
def test_several_operations__no_operation_name__request_error_and_nothing_runs(
    http: httpx.Client, api: Api, tenant: Tenant, accept: str, status: int
) -> None:
    document = (
        'mutation A { createDepartment(input: {name: "Op A"}) { __typename } } '
        'mutation B { createDepartment(input: {name: "Op B"}) { __typename } }'
    )
    headers = {"Authorization": f"Bearer {api.token(tenant.admin)}", "Accept": accept}
    response = http.post("/graphql", json={"query": document}, headers=headers)
    assert response.status_code == status, response.text
    body = response.json()
    assert "data" not in body
    assert body["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    names = api.admin_of(tenant).data("{ organization { departments(first: 50) { edges { node { name } } } } }")
    listed = [edge["node"]["name"] for edge in names["organization"]["departments"]["edges"]]
    assert "Op A" not in listed and "Op B" not in listed


def test_several_operations__named__the_named_one_runs(api: Api, tenant: Tenant) -> None:
    document = "query A { me { email } } query B { me { id } }"
    response = api.admin_of(tenant).post(document, operationName="A")
    assert response.json()["data"] == {"me": {"email": tenant.admin.email}}


@pytest.mark.parametrize("document", ["subscription { x }", "subscription OnMe { me { email } }"])
@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize(("accept", "status"), [("application/json", 200), ("application/graphql-response+json", 400)])
def test_subscription__either_method__request_error_subscriptions_not_supported(
    http: httpx.Client, document: str, method: str, accept: str, status: int
) -> None:
    """Not "mutations are not allowed when using GET", nor a schema validation message: what is wrong."""
    if method == "GET":
        response = http.get("/graphql", params={"query": document}, headers={"Accept": accept})
    else:
        response = http.post("/graphql", json={"query": document}, headers={"Accept": accept})
    assert response.status_code == status, response.text
    body = response.json()
    assert "data" not in body
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "SUBSCRIPTIONS_NOT_SUPPORTED"
    assert error["message"].startswith("subscriptions are not served as plain JSON")


def test_subscription__access_line__counts_its_code(http: httpx.Client) -> None:
    with captured_lines() as captured:
        http.post("/graphql", json={"query": "subscription { x }"}, headers={"X-Request-Id": "subscription-post"})
        lines = captured.wait_for_access_line("subscription-post")
    (line,) = [line for line in lines if line.get("requestId") == "subscription-post" and line["logger"] == "hr.access"]
    assert line["errors"] == {"SUBSCRIPTIONS_NOT_SUPPORTED": 1}
    assert line["dynamodbCalls"] == 0
