"""A GraphQL request's lifetime: its deadline, and cancellation when its client goes away.

ASGI middleware around the GraphQL view, so it holds whatever the transport does inside.
The deadline (REQUEST_TIMEOUT_SECONDS) is set here, handed to the request's session through
the ASGI scope, and enforced twice: the session refuses to send a call past it
(graphql_api/request/session.py), and the whole handling runs under ``asyncio.timeout``, whose
cancellation also cancels the calls still queued for the I/O pool. Past the deadline the
client gets ``extensions.code`` TIMEOUT with ``retryable: true`` (and the idempotency hint
if a write was sent). A client that disconnects (``http.disconnect`` on the receive channel
once the body is read) cancels the request the same way; nobody is left to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphql_api.execution.errors import timeout
from graphql_api.http.raw import error_body, send_error
from graphql_api.http.request_id import REQUEST_ID
from graphql_api.request.session import Deadline, RequestSession

log = logging.getLogger("hr.lifetime")

DEADLINE: Final = "hr.deadline"
SESSION: Final = "hr.session"


class RequestLifetime:
    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = Deadline.after(self.seconds)
        scope[DEADLINE] = deadline
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

        work = asyncio.ensure_future(self.app(scope, receive_body, tracking_send))
        disconnected = asyncio.Event()
        watcher = asyncio.ensure_future(_watch(receive, body_read, work, response, disconnected))
        try:
            async with asyncio.timeout(deadline.remaining()):
                await work
        except TimeoutError:
            _cancel_session(scope)
            log.warning("request %s: deadline of %g s passed", scope.get(REQUEST_ID), self.seconds)
            if not response["started"]:
                await _timeout_response(send, scope, self.seconds)
        except asyncio.CancelledError:
            if not disconnected.is_set():
                raise  # the server is stopping, not the client
            _cancel_session(scope)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            session = scope.get(SESSION)
            if isinstance(session, RequestSession):
                session.end()


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


def _cancel_session(scope: Scope) -> None:
    session = scope.get(SESSION)
    if isinstance(session, RequestSession):
        session.cancelled = True  # calls that reach a thread now are not sent


async def _timeout_response(send: Send, scope: Scope, seconds: float) -> None:
    session = scope.get(SESSION)
    written = isinstance(session, RequestSession) and session.write_dispatched
    error = timeout(seconds, maybe_written=written)
    # 504: the whole request timed out (no partial data), like a gateway that gave up.
    body = {"data": None, **error_body(error, requestId=scope.get(REQUEST_ID))}
    await send_error(scope, send, 504, error, body=body)
