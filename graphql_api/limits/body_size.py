"""Maximum request size: a POST body, or a GET query string, over the limit is 413.

The body is read (at most limit + 1 bytes) before the app sees it and handed on in one
message, so a chunked upload without Content-Length is bounded too.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphql_api.execution.errors import ApiError, Code
from graphql_api.observability.refusals import send_error


class MaxBodySize:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if len(scope.get("query_string", b"")) > self.max_bytes:
            await self._refuse(scope, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away; the app will see the disconnect
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await self._refuse(scope, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        refusal = ApiError(
            Code.BAD_USER_INPUT,
            f"the request is larger than {self.max_bytes} bytes",
            limit="bodySize",
            maxBytes=self.max_bytes,
        )
        await send_error(scope, send, 413, refusal)
