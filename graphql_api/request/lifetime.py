"""A GraphQL request's lifetime: its session, its deadline, and cancellation when its client goes away.

The /graphql endpoint. It makes the request's session (loaders, I/O, budgets) under the
request's deadline (REQUEST_TIMEOUT_SECONDS) and the request's context, hands the context to
the handler (GraphiQL's page or the GraphQL-over-HTTP transport: graphql_api/app.py), sends
what the handler answers, and ends the session once the request is over. The deadline is
enforced twice: the session refuses to send a call past it (graphql_api/request/session.py),
and the whole handling runs under ``asyncio.timeout``, whose cancellation also cancels the
DynamoDB calls it is awaiting. Past the deadline the client gets ``extensions.code``
TIMEOUT with ``retryable: true`` (and the idempotency hint if a write was sent). A client
that disconnects (``http.disconnect`` on the receive channel once the body is read) cancels
the request the same way; nobody is left to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from datastore.aws import calls
from graphql_api.execution.errors import timeout
from graphql_api.observability.refusals import error_body, send_error
from graphql_api.observability.request_id import REQUEST_ID, request_id_of
from graphql_api.request.context import RequestContext
from graphql_api.request.principal import principal_of
from graphql_api.request.services import Services
from graphql_api.request.session import Deadline, RequestSession

log = logging.getLogger("hr.lifetime")

Handler = Callable[[RequestContext], Awaitable[Response]]
"""What answers a request, given its context."""


class RequestLifetime:
    """An ASGI app for an HTTP route (Starlette's Route hands it nothing else)."""

    def __init__(self, handle: Handler, services: Services) -> None:
        self.handle = handle
        self.services = services
        self.seconds = services.settings.request_timeout_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        deadline = Deadline.after(self.seconds)
        body_read = asyncio.Event()
        response: dict[str, bool] = {"started": False, "complete": False}
        if scope.get("method") in ("GET", "HEAD"):
            body_read.set()

        async def receive_body() -> Message:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_read.set()
            return message

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                response["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                response["complete"] = True
            await send(message)

        request = Request(scope, receive_body)
        principal = principal_of(request)
        session = RequestSession(self.services, principal, deadline)
        context = RequestContext(request, Response(), request_id_of(scope), principal, session)
        work = asyncio.ensure_future(self._respond(context, receive_body, tracking_send))
        disconnected = asyncio.Event()
        watcher = asyncio.ensure_future(_watch(receive, body_read, work, response, disconnected))
        try:
            async with asyncio.timeout(deadline.remaining()):
                await work
        except TimeoutError:
            session.cancelled = True  # calls that reach a thread now are not sent
            log.warning("request %s: deadline of %g s passed", scope.get(REQUEST_ID), self.seconds)
            if not response["started"]:
                await _timeout_response(send, scope, self.seconds, written=session.write_dispatched)
        except asyncio.CancelledError:
            if not disconnected.is_set():
                raise  # the server is stopping, not the client
            session.cancelled = True
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            session.end()

    async def _respond(self, context: RequestContext, receive: Receive, send: Send) -> None:
        # Blocking calls copy the context they are issued from: this request's log, and its
        # loads start at depth 0. Set in the task of the work, which copied the server's context.
        calls.current_log.set(context.session.call_log)
        calls.current_depth.set(0)
        answer = await self.handle(context)
        await answer(context.request.scope, receive, send)


async def _watch(
    receive: Receive,
    body_read: asyncio.Event,
    work: asyncio.Future[None],
    response: dict[str, bool],
    disconnected: asyncio.Event,
) -> None:
    """Cancel ``work`` when the client disconnects before its response is complete."""
    await body_read.wait()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not response["complete"]:
                disconnected.set()
                work.cancel()
            return


async def _timeout_response(send: Send, scope: Scope, seconds: float, *, written: bool) -> None:
    error = timeout(seconds, maybe_written=written)
    # 504: the whole request timed out (no partial data), like a gateway that gave up.
    body = {"data": None, **error_body(error, requestId=scope.get(REQUEST_ID))}
    await send_error(scope, send, 504, error, body=body)
