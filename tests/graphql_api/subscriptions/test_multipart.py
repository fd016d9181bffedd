"""Subscriptions over multipart, part by part: Apollo's (subscriptionSpec 1.0) and GraphQL over
HTTP's incremental delivery (``multipart/mixed`` alone), what the stream carries and how it ends.

The raw response is read with httpx, so each part (an event, a heartbeat, the final error) and
the closing delimiter are seen as sent. Apollo Client's own link runs against it in
tests/graphql_api/frontend/test_apollo_multipart_subscriptions.py, urql against the
incremental one in tests/graphql_api/frontend/test_urql_subscriptions.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
from starlette.applications import Starlette

from datastore.tenants import employees
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import subscribed

ACCEPT = 'multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/json'
DIRECTORY = "subscription Directory { employeeChanged { cursor action employee { email } } }"


def parts(response: httpx.Response, seconds: float = 60, boundary: bytes = b"--graphql") -> Iterator[Any]:
    """Each part's JSON as it completes (its boundary arrived), then None at the closing delimiter.

    Heartbeats keep each read inside httpx's timeout, so the whole stream has a deadline of its
    own: a subscription that never delivers fails the test instead of hanging the suite.
    """
    deadline = time.monotonic() + seconds
    buffer = b""
    for chunk in response.iter_bytes():
        assert time.monotonic() < deadline, f"no end of the stream within {seconds} s"
        buffer += chunk
        while True:
            start = buffer.find(boundary)
            end = buffer.find(b"\r\n" + boundary, start + 1) if start >= 0 else -1
            if start >= 0 and buffer[start:].startswith(boundary + b"--"):
                yield None
                return
            if end < 0:
                break
            head, _, body = buffer[start + len(boundary) : end].partition(b"\r\n\r\n")
            assert b"content-type: application/json" in head.lower()
            yield json.loads(body)
            buffer = buffer[end + 2 :]


def test_event_part__then_termination__final_error_part_and_closing_delimiter(
    live_http: httpx.Client, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    employee = tenant.employee()
    headers = {"Accept": ACCEPT, "Authorization": f"Bearer {api.token(employee)}"}
    with live_http.stream("POST", "/graphql", json={"query": DIRECTORY}, headers=headers, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith('multipart/mixed;boundary="graphql";subscriptionSpec=1.0')
        received = parts(response)
        subscribed(live_app, tenant.org_id)
        hired = tenant.employee()
        first = next(part for part in received if part != {})  # heartbeats ({}) may come first
        change = first["payload"]["data"]["employeeChanged"]
        assert change["action"] == "employee.create" and change["employee"]["email"] == hired.email
        assert change["cursor"]
        print("multipart part:", json.dumps(first))

        run(employees.terminate_employee(tenant.table, employee.emp_id))  # the subscriber's own standing
        rest = [part for part in received if part != {}]
    *_, final, closing = rest
    assert final["payload"] is None
    assert [error["extensions"]["code"] for error in final["errors"]] == ["FORBIDDEN"]
    assert "not active" in final["errors"][0]["message"]
    assert closing is None


def test_no_credential__401_json(live_http: httpx.Client) -> None:
    response = live_http.post("/graphql", json={"query": DIRECTORY}, headers={"Accept": ACCEPT})
    assert response.status_code == 401
    assert [error["extensions"]["code"] for error in response.json()["errors"]] == ["UNAUTHENTICATED"]


def test_not_allowed_to_subscribe__refusal_part(live_http: httpx.Client, api: Api, tenant: Tenant) -> None:
    audit = "subscription { auditEventAdded { cursor } }"
    headers = {"Accept": ACCEPT, "Authorization": f"Bearer {api.token(tenant.employee())}"}
    with live_http.stream("POST", "/graphql", json={"query": audit}, headers=headers, timeout=30) as response:
        found = [part for part in parts(response) if part != {}]
    *refusal, closing = found
    assert closing is None
    assert [error["extensions"]["code"] for part in refusal for error in part["payload"]["errors"]] == ["FORBIDDEN"]


INCREMENTAL = "multipart/mixed"


def test_incremental__event_has_next__termination_error_then_has_next_false_and_closing_delimiter(
    live_http: httpx.Client, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    employee = tenant.employee()
    headers = {"Accept": INCREMENTAL, "Authorization": f"Bearer {api.token(employee)}"}
    with live_http.stream("POST", "/graphql", json={"query": DIRECTORY}, headers=headers, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == 'multipart/mixed; boundary="-"'
        received = parts(response, boundary=b"---")
        subscribed(live_app, tenant.org_id)
        hired = tenant.employee()
        first = next(received)
        assert first["hasNext"] is True
        assert first["data"]["employeeChanged"]["employee"]["email"] == hired.email
        run(employees.terminate_employee(tenant.table, employee.emp_id))
        *_, ended, last, closing = list(received)
    assert [error["extensions"]["code"] for error in ended["errors"]] == ["FORBIDDEN"]
    assert last == {"hasNext": False} and closing is None


def test_incremental__query__one_part_without_next(live_http: httpx.Client, api: Api, tenant: Tenant) -> None:
    headers = {"Accept": INCREMENTAL, "Authorization": f"Bearer {api.token(tenant.admin)}"}
    with live_http.stream("POST", "/graphql", json={"query": "{ me { email } }"}, headers=headers) as response:
        (only, closing) = list(parts(response, boundary=b"---"))
    assert only["data"] == {"me": {"email": tenant.admin.email}} and only["hasNext"] is False
    assert closing is None
