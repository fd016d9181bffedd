"""Requests a middleware refuses (401, 408, 413, 503, 504) are counted like GraphQL errors.

Each refusal's ``extensions.code`` appears in its access line's ``errors`` and in
``hr_requests_with_error``, whichever middleware refused it (counted once, in observability/refusals.py).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import orjson
from aiodynamo.http.types import Request
from prometheus_client import REGISTRY

from datastore.aws.client import AsyncDynamo
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.datastore import faults
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.live import serving, with_settings
from tests.graphql_api.observability.logs import CapturedLines, captured_lines

ME = "{ me { email } }"
HELD_SECONDS = 30.0  # the longest a held DynamoDB call waits for its release


def errors_total(code: str) -> float:
    return REGISTRY.get_sample_value("hr_requests_with_error_total", {"code": code}) or 0.0


def access_line(captured: CapturedLines, request_id: str) -> dict[str, Any]:
    """The one access line of ``request_id``."""
    lines = captured.wait_for_access_line(request_id)
    (line,) = [line for line in lines if line["logger"] == "hr.access" and line.get("requestId") == request_id]
    return line


def refused(api: Api | GraphQLClient | httpx.Client, request_id: str, body: bytes) -> httpx.Response:
    http = api if isinstance(api, httpx.Client) else api.http
    headers = {"X-Request-Id": request_id, "Content-Type": "application/json"}
    return http.post("/graphql", content=body, headers=headers)


@contextmanager
def held_calls(dynamo: AsyncDynamo) -> Iterator[tuple[threading.Event, threading.Event]]:
    """Every DynamoDB call waits for ``release``; ``entered`` is set once one is waiting."""
    entered, release = threading.Event(), threading.Event()

    async def hold(_request: Request) -> None:
        entered.set()
        await asyncio.get_running_loop().run_in_executor(None, release.wait, HELD_SECONDS)

    try:
        with faults.on_send(dynamo, hold):
            yield entered, release
    finally:
        release.set()


def test_refusal__body_over_limit__413_counted_as_bad_user_input(api: Api, api_settings: ApiSettings) -> None:
    before = errors_total("BAD_USER_INPUT")
    with captured_lines() as captured:
        response = refused(api, "refused-413", b" " * (api_settings.max_body_bytes + 1))
        line = access_line(captured, "refused-413")

    assert response.status_code == 413
    assert response.json()["errors"][0]["extensions"]["limit"] == "bodySize"
    assert (line["status"], line["errors"]) == (413, {"BAD_USER_INPUT": 1})
    assert errors_total("BAD_USER_INPUT") == before + 1


def test_refusal__body_never_finished__408_counted_as_bad_user_input(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    app = create_app(new_datastore(table_name), with_settings(api_settings, body_timeout_seconds=1.0))
    before = errors_total("BAD_USER_INPUT")
    with serving(app) as http, captured_lines() as captured:
        port = http.base_url.port
        assert port is not None
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            raw.sendall(
                b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: refused-408\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
            )
            received = b""
            while chunk := raw.recv(65536):
                received += chunk
        line = access_line(captured, "refused-408")

    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert orjson.loads(body)["errors"][0]["extensions"]["limit"] == "bodyTimeout"
    assert (line["status"], line["errors"]) == (408, {"BAD_USER_INPUT": 1})
    assert errors_total("BAD_USER_INPUT") == before + 1


def test_refusal__past_the_concurrency_cap__503_counted_as_unavailable(
    dynamo: AsyncDynamo, new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tenant: Tenant
) -> None:
    app = create_app(new_datastore(table_name), with_settings(api_settings, max_concurrent_requests=1))
    before = errors_total("UNAVAILABLE")
    with serving(app) as http, captured_lines() as captured, ThreadPoolExecutor(1) as pool:
        admin = Api(http, api_settings).admin_of(tenant)
        with held_calls(dynamo) as (entered, release):
            first = pool.submit(admin.post, ME)
            assert entered.wait(HELD_SECONDS), "the first request never reached DynamoDB"
            response = refused(http, "refused-503", orjson.dumps({"query": ME}))
            release.set()
        assert first.result().status_code == 200
        line = access_line(captured, "refused-503")

    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert (line["status"], line["errors"]) == (503, {"UNAVAILABLE": 1})
    assert errors_total("UNAVAILABLE") == before + 1


def test_refusal__deadline_passed__504_counted_as_timeout(
    dynamo: AsyncDynamo, new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tenant: Tenant
) -> None:
    app = create_app(new_datastore(table_name), with_settings(api_settings, request_timeout_seconds=0.5))
    admin = tenant.admin
    token = issue_token(api_settings, subject=admin.emp_id, org_id=admin.org_id, role=admin.role.value)
    before = errors_total("TIMEOUT")
    with serving(app) as http, captured_lines() as captured, held_calls(dynamo):
        response = http.post(
            "/graphql", json={"query": ME}, headers={"X-Request-Id": "refused-504", "Authorization": f"Bearer {token}"}
        )
        line = access_line(captured, "refused-504")

    assert response.status_code == 504
    assert response.json()["errors"][0]["extensions"]["code"] == "TIMEOUT"
    assert (line["status"], line["errors"]) == (504, {"TIMEOUT": 1})
    assert errors_total("TIMEOUT") == before + 1
