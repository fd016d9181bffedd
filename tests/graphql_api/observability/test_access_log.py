"""The access log over HTTP: one line per request, with what the request did and cost."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.kinds import layout
from datastore.tenancy import keys
from graphql_api.execution import ids
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api, Demo, GraphQLClient
from tests.graphql_api.observability.logs import WAIT_SECONDS, captured_lines
from tests.paths import EXAMPLE_QUERIES, graphql_blocks


def docs_directory_query() -> str:
    """The directory example (docs/api/queries.md), exactly as a reader would paste it."""
    (query,) = [block for block in graphql_blocks(EXAMPLE_QUERIES) if block.startswith("# The directory")]
    return query


def post(client: GraphQLClient, query: str, request_id: str, **extra: Any) -> httpx.Response:
    headers = {"X-Request-Id": request_id}
    if client.token is not None:
        headers["Authorization"] = f"Bearer {client.token}"
    return client.http.post("/graphql", json={"query": query, **extra}, headers=headers)


def test_access_log__docs_directory_as_employee__exactly_one_line_with_its_figures(api: Api, demo: Demo) -> None:
    dave = demo.person("dave@acme.co")
    with captured_lines() as captured:
        response = post(api.as_(dave), docs_directory_query(), "directory-as-dave")
        # Every line of this request carries its id; another test's late access line may not.
        lines = [
            line
            for line in captured.wait_for_access_line("directory-as-dave")
            if line.get("requestId") == "directory-as-dave"
        ]

    body = response.json()
    forbidden = [error for error in body["errors"] if error["extensions"]["code"] == "FORBIDDEN"]
    assert forbidden, body  # an employee may not see others' applications
    cost = body["extensions"]["cost"]
    assert len(lines) == 1, lines
    (line,) = lines
    assert line["level"] == "INFO"
    assert "stack" not in line
    assert "_aws" not in line  # EMF only under Lambda
    assert {key: line[key] for key in ("requestId", "method", "path", "status", "tenant", "operation")} == {
        "requestId": "directory-as-dave",
        "method": "POST",
        "path": "/graphql",
        "status": 200,
        "tenant": dave.org_id,
        "operation": None,  # the documented query has no name
    }
    assert line["errors"] == {"FORBIDDEN": len(forbidden)} == {"FORBIDDEN": len(body["errors"])}
    assert line["dynamodbCalls"] == cost["requestCount"] > 0
    assert line["rcu"] == cost["readCapacityUnits"] > 0
    assert line["wcu"] == 0
    assert line["durationMs"] > 0


def test_access_log__named_operation__its_name(api: Api, demo: Demo) -> None:
    with captured_lines() as captured:
        response = post(api.as_(demo.person("dave@acme.co")), "query Me { me { email } }", "named", operationName="Me")
        (line,) = captured.wait_for_access_line("named")

    assert response.json()["data"]["me"]["email"] == "dave@acme.co"
    assert line["operation"] == "Me"
    assert line["errors"] == {}
    assert line["dynamodbCalls"] >= 1


def test_access_log__bad_token__401_unauthenticated_and_no_tenant(anonymous: GraphQLClient) -> None:
    with captured_lines() as captured:
        response = post(anonymous.with_token("not-a-token"), "{ me { email } }", "bad-token")
        lines = captured.wait_for_access_line("bad-token")

    assert response.status_code == 401
    assert len(lines) == 1
    assert lines[0]["status"] == 401
    assert lines[0]["errors"] == {"UNAUTHENTICATED": 1}
    assert lines[0]["tenant"] is None
    assert lines[0]["dynamodbCalls"] == 0


def test_access_log__no_request_id_header__a_new_id_per_request(anonymous: GraphQLClient) -> None:
    with captured_lines() as captured:
        for _ in range(2):
            anonymous.post("{ __typename }")  # health routes are answered before the access log
        deadline = time.monotonic() + WAIT_SECONDS
        deadline_lines: list[dict[str, Any]] = []
        while len(deadline_lines) < 2 and time.monotonic() < deadline:
            deadline_lines = [line for line in captured.lines() if line["logger"] == "hr.access"]
            time.sleep(0.01)

    ids_seen = {line["requestId"] for line in deadline_lines}
    assert len(ids_seen) == 2
    assert all(re.fullmatch(r"[0-9A-Z]{26}", request_id) for request_id in ids_seen)


def test_access_log__internal_error__one_record_with_stack_and_request_id(
    api: Api, tenant: Tenant, client: DynamoDBClient, table_name: str
) -> None:
    # A real bug path: an item the code cannot read (a role no version of it ever wrote).
    employee = tenant.employee()
    key = layout.EMPLOYEE.key_at(tenant.org_id, employee.emp_id)
    client.update_item(
        TableName=table_name,
        Key={keys.PK: {"S": key.pk}, keys.SK: {"S": key.sk}},
        UpdateExpression="SET #role = :role",
        ExpressionAttributeNames={"#role": "role"},
        ExpressionAttributeValues={":role": {"S": "WIZARD"}},
    )
    query = "query($id: ID!) { employee(id: $id) { email } }"
    with captured_lines() as captured:
        response = post(
            api.admin_of(tenant), query, "corrupt-item", variables={"id": ids.encode("Employee", employee.emp_id)}
        )
        lines = captured.wait_for_access_line("corrupt-item")

    (error,) = response.json()["errors"]
    assert error["extensions"] == {"code": "INTERNAL", "requestId": "corrupt-item"}
    assert "WIZARD" not in str(response.json()) and "Error" not in error["message"]
    bug, access = lines  # the bug once, then the access line: nothing else
    assert bug["level"] == "ERROR"
    assert bug["requestId"] == "corrupt-item"
    assert "Traceback" in bug["stack"] and "'WIZARD'" in bug["stack"]  # the stored value no Role has
    assert access["logger"] == "hr.access"
    assert access["errors"] == {"INTERNAL": 1}
    assert "stack" not in access


def test_access_log__transport_refusals__counted_by_the_code_the_client_got(api: Api, demo: Demo) -> None:
    """A refusal of the transport (a mutation over GET, several operations unnamed) is logged
    under the code its answer carries, once, never as INTERNAL."""
    alice = api.as_(demo.person("alice@acme.co"))
    headers = {"Authorization": f"Bearer {alice.token}"}
    cases = {
        "mutation-over-get": (
            lambda: alice.http.get(
                "/graphql",
                params={"query": 'mutation { revokeApiKey(input: {id: "x"}) { apiKey { id } } }'},
                headers={**headers, "X-Request-Id": "mutation-over-get"},
            ),
            405,
            "METHOD_NOT_ALLOWED",
        ),
        "two-unnamed": (
            lambda: alice.http.post(
                "/graphql",
                json={"query": "query A { me { email } } query B { me { email } }"},
                headers={**headers, "X-Request-Id": "two-unnamed", "Accept": "application/graphql-response+json"},
            ),
            400,
            "BAD_REQUEST",
        ),
    }
    for request_id, (send, status, code) in cases.items():
        with captured_lines() as captured:
            response = send()
            lines = [line for line in captured.wait_for_access_line(request_id) if line.get("requestId") == request_id]
        assert response.status_code == status, response.text
        assert response.json()["errors"][0]["extensions"]["code"] == code
        (line,) = [line for line in lines if line["logger"] == "hr.access"]
        assert line["errors"] == {code: 1}, line
