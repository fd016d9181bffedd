"""Time to receive a request's body: a client that dribbles it is answered 408 and dropped.

Uvicorn bounds idle keep-alive connections (``timeout_keep_alive``) and the size of a
request head (h11's incomplete-event limit), but not the time a body takes to arrive. This
middleware reads through the app's ``receive`` with one deadline for the whole body,
BODY_TIMEOUT_SECONDS after the request head arrived. Past it the client gets HTTP 408 with
a coded GraphQL error and ``Connection: close``, so uvicorn closes the socket. Once the body
is complete, later receives (waiting for a disconnect) are not timed. It sits outside every
middleware that reads the body: the body-size check and the concurrency cap see only
complete bodies.
Slow request heads are bounded elsewhere (limits/header_timeout.py).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphql_api.execution.errors import ApiError, Code
from graphql_api.observability.refusals import send_error


class BodyTimeout(Exception):
    """The body did not arrive in time (raised out of ``receive`` to the middleware)."""


class MaxBodyTime:
    def __init__(self, app: ASGIApp, timeout_seconds: float) -> None:
        self.app = app
        self.timeout_seconds = timeout_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_seconds
        complete = False
        started = False

        async def timed_receive() -> Message:
            nonlocal complete
            if complete:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise BodyTimeout from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, tracked_send)
        except BodyTimeout:
            if not started:
                await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        refusal = ApiError(
            Code.BAD_USER_INPUT,
            f"the request body did not arrive within {self.timeout_seconds:g} seconds",
            limit="bodyTimeout",
            timeoutSeconds=self.timeout_seconds,
        )
        await send_error(scope, send, 408, refusal, [(b"connection", b"close")])
