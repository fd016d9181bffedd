"""ALLOWED_HOSTS: a request addressed to any other host is refused with 400 and a coded error.

Without it a web page can reach the server through DNS rebinding (its own name made to point
at 127.0.0.1), where ``/dev/tokens`` mints development tokens; and anything that builds a
URL from the Host header (Starlette's trailing-slash redirect) points wherever the client
says. Starlette's TrustedHostMiddleware decides (its parsing of the Host header, its
``*.domain`` wildcards; without its www-redirect, which would be a redirect); only its
plain-text refusal is replaced by our coded one, counted like every other refusal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphql_api.http.errors import TransportError, bad_request
from graphql_api.observability.record import record_error
from graphql_api.observability.refusals import send_json

# Set on the scope by the inner app Starlette's middleware calls only for an allowed host.
_ADMITTED: Final = "hr.host_admitted"
# 1008, policy violation: the WebSocket close code for "this server does not answer that host".
_POLICY_VIOLATION: Final = 1008


def host_refused() -> TransportError:
    return bad_request("the Host header names a host this server does not answer to")


async def _admit(scope: Scope, _receive: Receive, _send: Send) -> None:
    scope[_ADMITTED] = True


async def _drop(_message: Message) -> None:
    """Starlette's own refusal (plain text) is not sent: ours is."""


class AllowedHosts:
    """ASGI middleware: passes on requests for ``allowed_hosts`` only (``*`` passes any)."""

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str]) -> None:
        self.app = app
        self.allow_any = "*" in allowed_hosts
        self.check = TrustedHostMiddleware(_admit, allowed_hosts=list(allowed_hosts), www_redirect=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allow_any or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        await self.check(scope, receive, _drop)
        if scope.pop(_ADMITTED, False):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": _POLICY_VIOLATION})
        else:
            refusal = host_refused()
            record_error(scope, refusal.code.value)
            await send_json(send, refusal.status, refusal.body())
