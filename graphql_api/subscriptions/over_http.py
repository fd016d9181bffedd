"""Subscriptions over HTTP: a request to /graphql whose Accept chooses a stream streams the
subscription's events in it, framed as that stream (graphql_api/http/streams.py).

The streams (graphql_api/http/response.py's ``negotiate``): Server-Sent Events as graphql-sse's
"distinct connections" mode (``Accept: text/event-stream``: urql's ``fetchSubscriptions``,
GraphQL Yoga's and graphql-sse's clients), GraphQL over HTTP's incremental delivery
(``Accept: multipart/mixed``) and Apollo's multipart subscriptions (``Accept:
multipart/mixed;subscriptionSpec=1.0``: Apollo Client's HttpLink). One request, POST or GET,
is one connection and one subscription. Each event is a result of the stream; a heartbeat
every SUBSCRIPTION_KEEPALIVE_SECONDS where the stream has one; an end from the server's side
(the caller's standing, the lifetime, the token's expiry, a slow consumer) a last result whose
error's ``extensions.code`` says why; then the stream's end.

A query or mutation asked for as a stream is not a subscription: it is handed, body and all,
to the ordinary request (its deadline, its in-flight slot), which answers it as its one result
in the stream (graphql_api/http/transport.py). Refused before the stream starts (the body, no
credential or an inactive caller 401, an operator's token 403, too many connections 429,
DynamoDB not answering the caller's check 503) is an ordinary JSON GraphQL error response; a document that does not
validate, or that the caller may not subscribe with, is the stream's one result, as
graphql-sse's protocol requires.

It is the same subscription as over the WebSocket (websocket.py): the same authentication
(the request's header, checked by the middleware), the same live session, hub, limits,
cursors and authorisation at delivery. The stream runs outside the request deadline
(REQUEST_TIMEOUT_SECONDS bounds each event's delivery, not the stream) and gives back its
in-flight slot when it starts (graphql_api/limits/concurrency.py): it is bounded by the
connection limits instead, and ends at the connection's lifetime or when its credential runs
out, as a socket does (expiry.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Final

import strawberry
from graphql import GraphQLError, parse
from graphql import OperationType as CoreOperationType
from graphql.utilities import get_operation_ast
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType
from strawberry.utils.aio import aclosing

from datastore.errors import DatastoreError
from graphql_api.auth.active import check_active
from graphql_api.execution.errors import ApiError, Code
from graphql_api.http import response
from graphql_api.http.errors import TransportError, bad_request
from graphql_api.http.persisted import PersistedDocuments
from graphql_api.http.request import Operation, read_operations
from graphql_api.http.streams import FRAMINGS, Framing
from graphql_api.limits.concurrency import release_slot
from graphql_api.observability.record import record_error
from graphql_api.observability.refusals import error_body
from graphql_api.request.context import RequestContext
from graphql_api.request.principal import Principal, principal_of
from graphql_api.request.services import Services
from graphql_api.request.session import Deadline, RequestSession
from graphql_api.subscriptions import live_metrics
from graphql_api.subscriptions.closing import Closed
from graphql_api.subscriptions.connection import LiveConnection
from graphql_api.subscriptions.context import LiveContext
from graphql_api.subscriptions.expiry import until_over
from graphql_api.subscriptions.hub import LiveHub
from graphql_api.subscriptions.session import LiveSession

log = logging.getLogger("hr.live")

_END: Final = object()
# What the stream sends next: its bytes and whether they are an event (rather than a heartbeat
# or the server's last word), or _END.
_Item = tuple[bytes, bool] | object


def wants_stream(scope: Scope) -> bool:
    """A request to /graphql whose Accept chooses a stream (and one that chooses nothing is not)."""
    if scope.get("type") != "http":
        return False
    accept = dict(scope.get("headers") or ()).get(b"accept", b"").decode("latin-1")
    try:
        return response.streamed(response.negotiate(accept))
    except TransportError:
        return False  # 406: the ordinary request says so


def _refusal(scope: Scope, status: int, code: str, message: str) -> Response:
    """A JSON refusal before the stream starts; its code counted on the request's record, as every refusal's."""
    record_error(scope, code)
    headers = response.UNAUTHENTICATED_HEADERS if status == 401 else None
    return JSONResponse({"errors": [{"message": message, "extensions": {"code": code}}]}, status, headers)


def _refused(scope: Scope, error: ApiError) -> Response:
    """The caller's check refused: 401 for UNAUTHENTICATED, as every HTTP answer (its reason kept), else 403."""
    record_error(scope, error.code.value)
    status = 401 if error.code is Code.UNAUTHENTICATED else 403
    headers = response.UNAUTHENTICATED_HEADERS if status == 401 else None
    return JSONResponse(error_body(error), status, headers)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read from it given again first."""
    given = False

    async def again() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


class HttpSubscriptions:
    """The ASGI app of a request to /graphql that asks for a stream (graphql_api/app.py routes it here)."""

    def __init__(
        self,
        schema: strawberry.Schema,
        services: Services,
        hub: LiveHub,
        persisted: PersistedDocuments,
        request: ASGIApp,
    ) -> None:
        self.schema = schema
        self.services = services
        self.hub = hub
        self.persisted = persisted
        self.request = request  # the ordinary request, for what is not a subscription

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        media_type = response.negotiate(request.headers.get("accept"))
        try:
            operation = await read_operations(request, 0)
            assert not isinstance(operation, list)  # batches are refused with a batch bound of 0
            query = await self._document(request, operation)
        except TransportError as refused:
            answer = _refusal(scope, refused.status, refused.code.value, str(refused))
            answer.headers.update(refused.headers)
            await answer(scope, receive, send)
            return
        except DatastoreError:
            await _refusal(scope, 503, "UNAVAILABLE", "the document could not be read: try again shortly")(
                scope, receive, send
            )
            return
        if query is None:
            body = await request.body() if request.method == "POST" else b""
            await self.request(scope, _replaying(body, receive), send)
            return
        answer = await self._subscribe(request, operation, query, FRAMINGS[media_type])
        await answer(scope, receive, send)

    async def _document(self, request: Request, operation: Operation) -> str | None:
        """The text of ``operation``'s document if it is a subscription; None for anything else.

        Parsed under the token bound (MAX_TOKENS) like every document; one that does not parse
        is not a subscription, and the ordinary request reports why.
        """
        principal = principal_of(request)
        deadline = Deadline.after(self.services.settings.request_timeout_seconds)
        session = RequestSession(self.services, principal, deadline)
        context = RequestContext(request, Response(), str(uuid.uuid4()), principal, session)
        try:
            resolved = await self.persisted.resolve(operation, context)
        finally:
            session.end()
        if resolved.query is None:
            raise bad_request("the request has no GraphQL query")
        try:
            document = parse(resolved.query, no_location=True, max_tokens=self.services.settings.max_tokens)
        except GraphQLError:
            return None
        chosen = get_operation_ast(document, operation.operation_name)
        subscription = chosen is not None and chosen.operation is CoreOperationType.SUBSCRIPTION
        return resolved.query if subscription else None

    async def _subscribe(self, request: Request, operation: Operation, query: str, framing: Framing) -> Response:
        principal = principal_of(request)
        if principal is None:
            return _refusal(request.scope, 401, "UNAUTHENTICATED", "no credential: send Authorization: Bearer <token>")
        if principal.org_id is None:
            return _refusal(request.scope, 403, "FORBIDDEN", "a platform operator's token sees no tenant data")
        hub = self.hub
        if not hub.available:
            return _refusal(request.scope, 503, "UNAVAILABLE", "live updates are not served by this process")
        settings = self.services.settings
        queue: asyncio.Queue[_Item] = asyncio.Queue()

        async def closer(why: Closed) -> None:
            error = {"message": why.detail, "extensions": {"code": why.close.error_code}}
            queue.put_nowait((framing.ended([error]), False))
            queue.put_nowait(_END)

        connection = LiveConnection(principal, settings.subscription_queue_events, closer)
        context = self._context(request, principal, connection)
        try:
            await check_active(context)
            hub.admit(connection)
        except ApiError as refused:
            context.session.end()
            return _refused(request.scope, refused)
        except DatastoreError:
            context.session.end()
            return _refusal(request.scope, 503, "UNAVAILABLE", "the caller could not be checked: try again shortly")
        except Closed as refused:
            context.session.end()
            return _refusal(request.scope, 429, "TOO_MANY_CONNECTIONS", refused.detail)
        results = await self.schema.stream(
            query,
            variable_values=operation.variables,
            context_value=context,
            operation_name=operation.operation_name,
            allowed_operation_types=(OperationType.SUBSCRIPTION,),
        )
        # From here the request is a live connection, bounded by the live limits, not the in-flight cap.
        release_slot(request.scope)
        return StreamingResponse(
            self._stream(framing, results, connection, context, queue),
            media_type=framing.content_type,
            headers={"Cache-Control": "no-store", "Vary": "Accept, Authorization"},
        )

    def _context(self, request: Request, principal: Principal, connection: LiveConnection) -> RequestContext:
        timeout = self.services.settings.request_timeout_seconds
        session = LiveSession(self.services, principal, Deadline.after(timeout), connection=connection)
        return LiveContext(request, Response(), str(uuid.uuid4()), principal, session, hub=self.hub)

    async def _stream(
        self,
        framing: Framing,
        results: Any,
        connection: LiveConnection,
        context: RequestContext,
        queue: asyncio.Queue[_Item],
    ) -> AsyncIterator[bytes]:
        settings = self.services.settings
        principal = connection.principal
        # One event in hand at a time: the next is taken from the subscription once this one is
        # sent, so the events a slow client has not read wait in the subscription's own queue,
        # bounded by SUBSCRIPTION_QUEUE_EVENTS (past it the connection is closed SLOW), not here.
        sent = asyncio.Semaphore(0)

        async def events() -> None:
            async with aclosing(results):
                async for result in results:
                    if not isinstance(result, ExecutionResult):
                        continue  # no incremental delivery here
                    queue.put_nowait((framing.result(response.payload(result)), True))
                    if isinstance(result, PreExecutionError) or (result.data is None and result.errors):
                        break  # refused, or ended by an error: the subscription is over
                    await sent.acquire()
            queue.put_nowait(_END)

        async def heartbeat() -> None:
            beat = framing.heartbeat()
            if beat is None:
                return
            while True:
                await asyncio.sleep(settings.subscription_keepalive_seconds)
                if queue.empty():  # a stream with something to send is not idle
                    queue.put_nowait((beat, False))

        async def ending() -> None:
            await until_over(self.services, connection, again="subscribe again")

        tasks = [asyncio.create_task(work()) for work in (events, heartbeat, ending)]
        ended = "the client went away"
        try:
            yield framing.opening()
            while True:
                item = await queue.get()
                if item is _END:
                    break
                assert isinstance(item, tuple)
                framed, event = item
                yield framed
                if event:
                    sent.release()
            ended = "the subscription completed" if connection.closed is None else connection.closed.detail
            yield framing.closing()
        finally:
            lasted = time.monotonic() - connection.opened
            log.info("%s subscription of %s ended after %.0f s: %s", framing.name, principal.subject, lasted, ended)
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            self.hub.release(connection)
            live_metrics.connection_ended(connection, framing.name)
            context.session.end()
