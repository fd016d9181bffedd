"""Subscriptions over Server-Sent Events (graphql-sse's distinct connections mode), event by event.

The raw stream is read with httpx, so each ``next``, each heartbeat comment and the
``complete`` are seen as sent; the limits, the lifetime, the token's expiry and the caller's
standing end an SSE subscription as they end a socket. urql and graphql-sse's own client run
against it in tests/graphql_api/frontend/test_urql_subscriptions.py and test_graphql_sse.py.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from datastore.tenants import employees
from graphql_api.app import create_app
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.limits.concurrency import MaxConcurrentRequests
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings
from tests.graphql_api.observability.logs import captured_lines
from tests.graphql_api.observability.test_refusals import access_line
from tests.graphql_api.subscriptions.conftest import subscribed
from tests.graphql_api.subscriptions.test_limits import bounds
from tests.waiting import until

DIRECTORY = "subscription Directory { employeeChanged { cursor action employee { email } } }"
HEARTBEAT = ("heartbeat", None)


def sse(token: str | None = None, accept: str = "text/event-stream") -> dict[str, str]:
    headers = {"Accept": accept}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def events(response: httpx.Response, seconds: float = 60) -> Iterator[tuple[str, Any]]:
    """Each event as (event, data parsed as JSON, or None when empty), a comment as HEARTBEAT.

    The whole stream has a deadline of its own: one that never ends fails the test instead of
    hanging the suite.
    """
    deadline = time.monotonic() + seconds
    event, data = "", []
    for line in response.iter_lines():
        assert time.monotonic() < deadline, f"no end of the stream within {seconds} s"
        if line.startswith(":"):
            yield HEARTBEAT
        elif line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data.append(line.removeprefix("data:").strip())
        elif line == "" and event:
            text = "\n".join(data)
            yield event, json.loads(text) if text else None
            event, data = "", []


def subscription(live_http: httpx.Client, token: str, query: str = DIRECTORY, accept: str = "text/event-stream") -> Any:
    return live_http.stream("POST", "/graphql", json={"query": query}, headers=sse(token, accept), timeout=30)


def codes(result: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in result.get("errors", ())]


def test_event__then_termination__forbidden_next_then_complete(
    live_http: httpx.Client, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    employee = tenant.employee()
    with subscription(live_http, api.token(employee)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-store"
        received = (item for item in events(response) if item != HEARTBEAT)
        subscribed(live_app, tenant.org_id)
        hired = tenant.employee()
        event, result = next(received)
        assert event == "next"
        change = result["data"]["employeeChanged"]
        assert change["action"] == "employee.create" and change["employee"]["email"] == hired.email
        assert change["cursor"]
        print("SSE event:", json.dumps(result))

        run(employees.terminate_employee(tenant.table, employee.emp_id))  # the subscriber's own standing
        rest = list(received)
    *_, (last, ended), (completed, nothing) = rest
    assert last == "next" and codes(ended) == ["FORBIDDEN"] and "not active" in ended["errors"][0]["message"]
    assert "data" not in ended
    assert (completed, nothing) == ("complete", None)


def test_heartbeat_comments_while_idle(live_http: httpx.Client, live_app: Starlette, api: Api, tenant: Tenant) -> None:
    keepalive = bounds(live_app, subscription_keepalive_seconds=0.2)
    with keepalive, subscription(live_http, api.token(tenant.admin)) as response:
        received = events(response)
        assert [next(received) for _ in range(3)] == [HEARTBEAT] * 3


def test_get__subscribes_too(live_http: httpx.Client, live_app: Starlette, api: Api, tenant: Tenant) -> None:
    headers = sse(api.token(tenant.admin))
    with live_http.stream("GET", "/graphql", params={"query": DIRECTORY}, headers=headers, timeout=30) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        received = (item for item in events(response) if item != HEARTBEAT)
        subscribed(live_app, tenant.org_id)
        hired = tenant.employee()
        event, result = next(received)
    assert event == "next" and result["data"]["employeeChanged"]["employee"]["email"] == hired.email


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_query__one_next_then_complete(live_http: httpx.Client, api: Api, tenant: Tenant, method: str) -> None:
    query = "{ me { email } }"
    request: dict[str, Any] = {"json": {"query": query}} if method == "POST" else {"params": {"query": query}}
    response = live_http.request(method, "/graphql", headers=sse(api.token(tenant.admin)), **request)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.text.startswith("event: next\ndata: {") and response.text.endswith("\n\nevent: complete\ndata:\n\n")
    (event, result), end = events(response)
    assert event == "next" and result["data"] == {"me": {"email": tenant.admin.email}}
    assert end == ("complete", None)


def test_mutation__one_next_then_complete(live_http: httpx.Client, api: Api, tenant: Tenant) -> None:
    mutation = 'mutation { createDepartment(input: {name: "Streamed"}) { department { name } } }'
    response = live_http.post("/graphql", json={"query": mutation}, headers=sse(api.token(tenant.admin)))
    received = list(events(response))
    assert [event for event, _ in received] == ["next", "complete"]
    assert "errors" not in received[0][1], received


def test_query_json_listed_first__json(live_http: httpx.Client, api: Api, tenant: Tenant) -> None:
    """urql's Accept for a query: JSON first, so JSON it is."""
    accept = "application/graphql-response+json, application/graphql+json, application/json, text/event-stream"
    response = live_http.post(
        "/graphql", json={"query": "{ me { email } }"}, headers=sse(api.token(tenant.admin), accept)
    )
    assert response.headers["content-type"].startswith("application/graphql-response+json")
    assert response.json()["data"] == {"me": {"email": tenant.admin.email}}


def test_validation_error__a_next_with_errors_then_complete(live_http: httpx.Client, api: Api, tenant: Tenant) -> None:
    """graphql-sse: errors of the document are told in the accepted stream, not as a 400 (each
    with the code its operation gets over every transport)."""
    for query, code in (
        ("subscription { employeeChanged { nope } }", "BAD_USER_INPUT"),
        ("{ nope }", "GRAPHQL_VALIDATION_FAILED"),
    ):
        with subscription(live_http, api.token(tenant.admin), query) as response:
            assert response.status_code == 200
            received = [item for item in events(response) if item != HEARTBEAT]
        (event, result), end = received
        assert event == "next" and codes(result) == [code] and "data" not in result
        assert end == ("complete", None)


def test_not_allowed_to_subscribe__forbidden_next_then_complete(
    live_http: httpx.Client, api: Api, tenant: Tenant
) -> None:
    audit = "subscription { auditEventAdded { cursor } }"
    with subscription(live_http, api.token(tenant.employee()), audit) as response:
        received = [item for item in events(response) if item != HEARTBEAT]
    (event, result), end = received
    assert event == "next" and codes(result) == ["FORBIDDEN"]
    assert end == ("complete", None)


def test_refused_before_the_stream__json_with_codes(
    live_http: httpx.Client, api: Api, api_settings: ApiSettings, tenant: Tenant
) -> None:
    no_credential = live_http.post("/graphql", json={"query": DIRECTORY}, headers=sse())
    assert no_credential.status_code == 401 and no_credential.headers["www-authenticate"] == "Bearer"
    assert no_credential.headers["content-type"].startswith("application/json")
    assert codes(no_credential.json()) == ["UNAUTHENTICATED"]

    operator = issue_token(api_settings, subject="operator", org_id=None, role=PLATFORM_ROLE)
    refused = live_http.post("/graphql", json={"query": DIRECTORY}, headers=sse(operator))
    assert (refused.status_code, codes(refused.json())) == (403, ["FORBIDDEN"])

    token = api.token(tenant.admin)
    headers = {**sse(token), "Content-Type": "application/json"}
    not_json = live_http.post("/graphql", content=b"{nope", headers=headers)
    assert (not_json.status_code, codes(not_json.json())) == (400, ["BAD_REQUEST"])
    batch = live_http.post("/graphql", json=[{"query": DIRECTORY}], headers=sse(token))
    assert (batch.status_code, codes(batch.json())) == (400, ["BAD_REQUEST"])

    leaver = tenant.employee()
    leaver_token = api.token(leaver)
    run(employees.terminate_employee(tenant.table, leaver.emp_id))
    inactive = live_http.post("/graphql", json={"query": DIRECTORY}, headers=sse(leaver_token))
    assert (inactive.status_code, codes(inactive.json())) == (401, ["UNAUTHENTICATED"])
    assert inactive.json()["errors"][0]["extensions"]["reason"] == "ACCOUNT_INACTIVE"
    assert inactive.headers["www-authenticate"] == "Bearer"


def test_connections_per_organisation_and_per_process__429_json(
    live_http: httpx.Client, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    token = api.token(tenant.admin)
    hub = live_app.state.live
    with subscription(live_http, token) as first:
        assert first.status_code == 200
        subscribed(live_app, tenant.org_id)
        for bound, says in (
            ({"subscription_connections_per_tenant": 1}, "your organisation"),
            ({"subscription_connections": hub.total}, "this server"),
        ):
            with bounds(live_app, **bound), subscription(live_http, token) as refused:
                assert refused.status_code == 429, refused.status_code  # before any body: none is read
                refused.read()
                assert codes(refused.json()) == ["TOO_MANY_CONNECTIONS"]
                assert says in refused.json()["errors"][0]["message"]


def test_lifetime__timeout_next_then_complete__its_end_logged(
    live_http: httpx.Client, live_app: Starlette, api: Api, tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, logger="hr.live"),
        bounds(live_app, subscription_lifetime_seconds=0.5),
        subscription(live_http, api.token(tenant.admin)) as response,
    ):
        received = [item for item in events(response) if item != HEARTBEAT]
    (event, result), end = received
    assert event == "next" and codes(result) == ["TIMEOUT"] and "lifetime" in result["errors"][0]["message"]
    assert end == ("complete", None)
    deadline = time.monotonic() + 10  # the server's thread logs once the stream's generator is closed
    ended = f"SSE subscription of {tenant.admin.emp_id} ended after"
    while not any(ended in line and "0.5 s lifetime" in line for line in caplog.messages):
        assert time.monotonic() < deadline, caplog.messages
        time.sleep(0.05)


def test_token_expiry__forbidden_next_then_complete(
    live_http: httpx.Client, api_settings: ApiSettings, tenant: Tenant
) -> None:
    short = issue_token(api_settings, subject=tenant.admin.emp_id, org_id=tenant.org_id, role="admin", ttl_seconds=2)
    started = time.monotonic()
    with subscription(live_http, short) as response:
        received = [item for item in events(response) if item != HEARTBEAT]
    (event, result), end = received
    assert event == "next" and codes(result) == ["FORBIDDEN"] and "expired" in result["errors"][0]["message"]
    assert end == ("complete", None)
    assert time.monotonic() - started < 30


def in_flight_cap(app: Starlette) -> MaxConcurrentRequests:
    """The app's in-flight cap, found down its middleware stack (built on its first request)."""
    layer: Any = app.middleware_stack
    while not isinstance(layer, MaxConcurrentRequests):
        layer = layer.app
    return layer


def test_subscription_gives_its_in_flight_slot_back__a_query_keeps_its(
    live_http: httpx.Client, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    cap = in_flight_cap(live_app)
    token = api.token(tenant.admin)
    before = cap.max_requests
    cap.max_requests = 1
    try:
        with subscription(live_http, token) as streaming:
            assert streaming.status_code == 200
            subscribed(live_app, tenant.org_id)
            assert cap.in_flight == 0  # the stream holds no slot
            answered = live_http.post("/graphql", json={"query": "{ me { email } }"}, headers=sse(token))
            assert [event for event, _ in events(answered)] == ["next", "complete"]
        # The query's slot is given back once its answer is sent, which the client may read
        # first; setting the count before then would be undone by that give-back.
        run(until(lambda: cap.in_flight == 0, 10, "the query's slot given back"))
        cap.in_flight = 1  # as if a request were being served: a query asked for as a stream waits its turn
        busy = live_http.post("/graphql", json={"query": "{ me { email } }"}, headers=sse(token))
        assert (busy.status_code, codes(busy.json())) == (503, ["UNAVAILABLE"])
    finally:
        cap.in_flight = 0
        cap.max_requests = before


def test_under_lambda__no_stream_held__503_json(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, api: Api, tenant: Tenant
) -> None:
    """No Lambda invocation outlives its answer to hold a stream: API Gateway's WebSocket API
    serves subscriptions there; a query asked for as a stream is still answered."""
    app = create_app(new_datastore(table_name), with_settings(api_settings, lambda_function="hr-api"))
    with serving(app) as lambda_http:
        refused = lambda_http.post("/graphql", json={"query": DIRECTORY}, headers=sse(api.token(tenant.admin)))
        answered = lambda_http.post(
            "/graphql", json={"query": "{ me { email } }"}, headers=sse(api.token(tenant.admin))
        )
    assert (refused.status_code, codes(refused.json())) == (503, ["UNAVAILABLE"])
    assert [event for event, _ in events(answered)] == ["next", "complete"]


def test_refused_stream__counted_in_its_access_line(live_http: httpx.Client, api: Api, tenant: Tenant) -> None:
    with captured_lines() as captured:
        headers = {**sse(api.token(tenant.admin)), "X-Request-Id": "sse-refused-batch"}
        batch = live_http.post("/graphql", json=[{"query": DIRECTORY}], headers=headers)
        line = access_line(captured, "sse-refused-batch")
    assert batch.status_code == 400
    assert (line["status"], line["errors"]) == (400, {"BAD_REQUEST": 1})
