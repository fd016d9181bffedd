"""A request's lifetime (graphql_api/request/lifetime.py): it makes the session and the context,
hands them down, and ends the session; nothing comes back through the ASGI scope."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from graphql_api.observability.request_id import REQUEST_ID, RequestIdMiddleware
from graphql_api.request.context import RequestContext
from graphql_api.request.cursors import CursorCodec
from graphql_api.request.lifetime import Handler, RequestLifetime
from graphql_api.request.services import Services
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory


def post(new_datastore: DatastoreFactory, table_name: str, settings: ApiSettings, handle: Handler) -> httpx.Response:
    async def send() -> httpx.Response:
        with ThreadPoolExecutor(1) as pool:
            services = Services(settings, new_datastore(table_name), pool, CursorCodec(settings.jwt_secret))
            app = Starlette(
                routes=[Route("/graphql", RequestLifetime(handle, services))],
                middleware=[Middleware(RequestIdMiddleware)],
            )
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
                return await http.post("/graphql", json={}, headers={"X-Request-Id": "r-1"})

    return asyncio.run(send())


def test_lifetime__handler_given_the_context__session_ended__scope_untouched(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    seen: list[RequestContext] = []
    scope_keys: list[set[str]] = []

    async def handle(context: RequestContext) -> Response:
        seen.append(context)
        scope_keys.append(set(context.request.scope))
        assert context.session.principal is None and not context.session.deadline.passed()
        context.session.when_tenant_reached(lambda: None)
        return JSONResponse({"request": context.request_id})

    response = post(new_datastore, table_name, api_settings, handle)
    assert response.json() == {"request": "r-1"}
    (context,) = seen
    assert not any(key.startswith("hr.") and key != "hr.request_id" for key in scope_keys[0])
    assert set(context.request.scope) == scope_keys[0]  # nothing put back for anyone to read
    assert context.session._on_tenant_reached == []  # ended: what it held is let go


def test_lifetime__deadline_passes__504_timeout_and_the_session_cancelled(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    seen: list[RequestContext] = []

    async def handle(context: RequestContext) -> Response:
        seen.append(context)
        await asyncio.sleep(5)
        raise AssertionError("past the deadline")

    response = post(new_datastore, table_name, replace(api_settings, request_timeout_seconds=0.2), handle)
    body: dict[str, Any] = response.json()
    assert response.status_code == 504
    assert body["errors"][0]["extensions"]["code"] == "TIMEOUT"
    assert body["errors"][0]["extensions"]["requestId"] == "r-1"
    assert seen[0].session.cancelled


def test_lifetime__client_hangs_up__the_work_cancelled_nothing_sent_the_server_task_goes_on(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    """A hang-up once the body is read cancels the work; the server's task for the request is
    not cancelled, and goes on (uvicorn's does)."""
    seen: list[RequestContext] = []
    sent: list[dict[str, Any]] = []
    cancelled = asyncio.Event()

    async def handle(context: RequestContext) -> Response:
        seen.append(context)
        assert await context.request.body() == b"{}"  # the watch for a hang-up starts once it is read
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("the client hung up")

    async def serve() -> float:
        with ThreadPoolExecutor(1) as pool:
            services = Services(api_settings, new_datastore(table_name), pool, CursorCodec(api_settings.jwt_secret))
            messages = [{"type": "http.request", "body": b"{}", "more_body": False}, {"type": "http.disconnect"}]

            async def receive() -> dict[str, Any]:
                if len(messages) == 1:
                    await asyncio.sleep(0.1)  # the hang-up comes while the work runs
                return messages.pop(0)

            async def send(message: dict[str, Any]) -> None:
                sent.append(message)

            scope = {"type": "http", "method": "POST", "path": "/graphql", "headers": [], REQUEST_ID: "r-2"}
            started = time.monotonic()
            await RequestLifetime(handle, services)(scope, receive, send)
            took = time.monotonic() - started
            task = asyncio.current_task()
            assert task is not None and task.cancelling() == 0  # nothing left pending on it
            await asyncio.sleep(0)  # and it awaits as usual
            return took

    took = asyncio.run(serve())
    assert cancelled.is_set() and took < 2
    assert sent == []  # nobody is left to answer
    assert seen[0].session.cancelled
