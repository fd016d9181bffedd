"""X-Request-Id on every response, the 401s, 413s and 404s included.

The outermost middleware: it takes the client's id when it is a sane token (at most 64
printable ASCII characters without spaces, so it is safe to log and to echo) or mints a
ULID, puts it in the scope for the view and the logs, and adds it to the response headers.
"""

from __future__ import annotations

import re
from typing import Final

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from ulid import ULID

REQUEST_ID: Final = "hr.request_id"
HEADER: Final = "X-Request-Id"
_SANE = re.compile(rb"[!-~]{1,64}")


def request_id_of(scope: Scope) -> str:
    """The request's id, as RequestIdMiddleware chose it."""
    return str(scope[REQUEST_ID])


def request_id_for(scope: Scope) -> str:
    """The client's X-Request-Id when it is a sane token, else a new ULID."""
    sent = dict(scope["headers"]).get(b"x-request-id", b"")
    return sent.decode() if _SANE.fullmatch(sent) else str(ULID())


class RequestIdMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = request_id_for(scope)
        scope[REQUEST_ID] = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        await self.app(scope, receive, send_with_id)
