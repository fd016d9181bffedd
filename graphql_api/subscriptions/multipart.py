"""Apollo's HTTP multipart subscriptions: a POST to /graphql with
``Accept: multipart/mixed;subscriptionSpec=1.0`` streams the subscription's events as parts.

The protocol (Apollo's "Multipart HTTP protocol for GraphQL subscriptions"): the response is
``multipart/mixed;boundary="graphql";subscriptionSpec=1.0``; each part is JSON, an event as
``{"payload": {"data": ..., "errors": ...}}``, a heartbeat ``{}`` (every
SUBSCRIPTION_KEEPALIVE_SECONDS) so proxies keep the connection open, and an error that ends
the subscription from the transport's side as ``{"payload": null, "errors": [...]}`` with its
``extensions.code``; the closing boundary ends it. A refusal before the stream starts (no
credential, an operator's token, too many connections, a document error) is an ordinary JSON
GraphQL error response, as for any POST.

It is the same subscription as over the WebSocket (websocket.py): the same authentication
(the request's header, checked by the middleware), the same live session, hub, limits,
cursors and authorisation at delivery; a connection is one subscription. The request runs
outside the request deadline (REQUEST_TIMEOUT_SECONDS bounds each event's delivery, not the
stream) and holds no in-flight slot (graphql_api/limits/concurrency.py): it is bounded by the
connection limits instead, and ends at the connection's lifetime or when its credential runs
out, as a socket does (expiry.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any, Final

import orjson
import strawberry
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType
from strawberry.utils.aio import aclosing

from datastore.errors import DatastoreError
from graphql_api.auth.active import check_active
from graphql_api.auth.backend import principal_of
from graphql_api.auth.tokens import Principal
from graphql_api.execution.errors import ApiError
from graphql_api.http.errors import TransportError, bad_request
from graphql_api.http.persisted import PersistedDocuments
from graphql_api.http.request import read_operations
from graphql_api.http.response import payload
from graphql_api.request.context import RequestContext
from graphql_api.request.services import Services
from graphql_api.request.session import Deadline
from graphql_api.subscriptions.closing import Closed
from graphql_api.subscriptions.connection import LiveConnection
from graphql_api.subscriptions.expiry import until_over
from graphql_api.subscriptions.session import LiveSession

log = logging.getLogger("hr.live")

BOUNDARY: Final = "graphql"
CONTENT_TYPE: Final = f'multipart/mixed;boundary="{BOUNDARY}";subscriptionSpec=1.0'
_HEARTBEAT: Final = b"{}"
_END: Final = object()


def wants_multipart(scope: Scope) -> bool:
    """A POST whose Accept names multipart/mixed with subscriptionSpec 1.0 (quoted or not)."""
    if scope.get("type") != "http" or scope.get("method") != "POST":
        return False
    accept = dict(scope.get("headers") or ()).get(b"accept", b"").decode("latin-1").lower()
    for media_range in accept.split(","):
        kind, *parameters = (piece.strip() for piece in media_range.split(";"))
        if kind == "multipart/mixed" and any(
            name.strip() == "subscriptionspec" and value.strip().strip('"') == "1.0"
            for name, _, value in (parameter.partition("=") for parameter in parameters)
        ):
            return True
    return False


def part(body: bytes) -> bytes:
    """One part, closed by the boundary at once: a client parses a part when its boundary arrives."""
    head = b"\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % len(body)
    return head + body + b"\r\n--" + BOUNDARY.encode()


def _refusal(status: int, code: str, message: str) -> Response:
    return JSONResponse({"errors": [{"message": message, "extensions": {"code": code}}]}, status_code=status)


class MultipartSubscriptions:
    """The ASGI app of a multipart subscription request (graphql_api/app.py routes it here)."""

    def __init__(self, schema: strawberry.Schema, services: Services, persisted: PersistedDocuments) -> None:
        self.schema = schema
        self.services = services
        self.persisted = persisted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        answer = await self._answer(request)
        await answer(scope, receive, send)

    async def _answer(self, request: Request) -> Response:
        principal = principal_of(request)
        if principal is None:
            return _refusal(401, "UNAUTHENTICATED", "no credential: send Authorization: Bearer <token>")
        if principal.org_id is None:
            return _refusal(403, "FORBIDDEN", "a platform operator's token sees no tenant data")
        hub = self.services.live
        if hub is None or not hub.available:
            return _refusal(503, "UNAVAILABLE", "live updates are not served by this process")
        settings = self.services.settings
        queue: asyncio.Queue[bytes | object] = asyncio.Queue()

        async def closer(why: Closed) -> None:
            error = {"message": why.detail, "extensions": {"code": why.close.error_code}}
            await queue.put(orjson.dumps({"payload": None, "errors": [error]}))
            await queue.put(_END)

        connection = LiveConnection(principal, settings.subscription_queue_events, closer)
        context = self._context(request, principal, connection)
        try:
            await check_active(context)
            operation = await read_operations(request, 0)
            assert not isinstance(operation, list)  # batches are refused with a batch bound of 0
            resolved = await self.persisted.resolve(operation, context)
            if resolved.query is None:
                raise bad_request("the request has no GraphQL query")
            hub.admit(connection)
        except ApiError as refused:
            context.session.end()
            return _refusal(403, refused.code.value, str(refused))
        except TransportError as refused:
            context.session.end()
            return _refusal(refused.status, refused.code.value, str(refused))
        except DatastoreError:
            context.session.end()
            return _refusal(503, "UNAVAILABLE", "the caller could not be checked: try again shortly")
        except Closed as refused:
            context.session.end()
            return _refusal(429, "TOO_MANY_CONNECTIONS", refused.detail)
        results = await self.schema.stream(
            resolved.query,
            variable_values=operation.variables,
            context_value=context,
            operation_name=operation.operation_name,
            allowed_operation_types=(OperationType.SUBSCRIPTION,),
        )
        return StreamingResponse(
            self._parts(results, connection, context, queue, request),
            media_type=CONTENT_TYPE,
            headers={"Cache-Control": "no-store", "Vary": "Accept, Authorization"},
        )

    def _context(self, request: Request, principal: Principal, connection: LiveConnection) -> RequestContext:
        timeout = self.services.settings.request_timeout_seconds
        session = LiveSession(self.services, principal, Deadline.after(timeout), connection=connection)
        return RequestContext(request, Response(), str(uuid.uuid4()), principal, session)

    async def _parts(
        self,
        results: Any,
        connection: LiveConnection,
        context: RequestContext,
        queue: asyncio.Queue[bytes | object],
        request: Request,
    ) -> AsyncIterator[bytes]:
        settings = self.services.settings

        async def events() -> None:
            async with aclosing(results):
                async for result in results:
                    if not isinstance(result, ExecutionResult):
                        continue  # no incremental delivery here
                    await queue.put(orjson.dumps({"payload": payload(result)}))
                    if isinstance(result, PreExecutionError) or (result.data is None and result.errors):
                        break  # refused, or ended by an error: the subscription is over
            await queue.put(_END)

        async def heartbeat() -> None:
            while True:
                await asyncio.sleep(settings.subscription_keepalive_seconds)
                await queue.put(_HEARTBEAT)

        async def ending() -> None:
            await until_over(self.services, connection, again="subscribe again")

        tasks = [asyncio.create_task(work()) for work in (events, heartbeat, ending)]
        try:
            yield b"--" + BOUNDARY.encode()
            while True:
                item = await queue.get()
                if item is _END:
                    break
                assert isinstance(item, bytes)
                yield part(item)
            yield b"--\r\n"  # after the last part's boundary: the closing delimiter
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            hub = self.services.live
            if hub is not None:
                hub.release(connection)
            context.session.end()
