"""Maximum requests in flight in this process: past it, HTTP 503 with Retry-After, at once.

A pure ASGI middleware: a counter taken when a request enters the app and given back when
the app returns, so a refused request costs no GraphQL parsing and no DynamoDB call. The
event loop runs one callback at a time, so a plain integer needs no lock. It sits inside
the body-size and body-timeout middlewares: a client still sending its body holds no slot,
so slow clients cannot fill the cap. Health probes (EXEMPT_PATHS) are never refused: a
busy process is alive, and an orchestrator must still be able to ask. A subscription over
HTTP (graphql_api/subscriptions/over_http.py) lasts as long as its subscriber listens: it
takes a slot like any request while it is read and admitted, and gives it back
(``release_slot``) when its stream starts, bounded by the live connection limits from then
on. Which requests are subscriptions is known only once their body is read, so the slot is
given back rather than never taken: a query asked for as a stream keeps it.
"""

from __future__ import annotations

from typing import Final

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from graphql_api.execution.errors import ApiError, Code
from graphql_api.observability.refusals import error_body, send_error

EXEMPT_PATHS: Final = frozenset({"/healthz", "/readyz"})
# Seconds a refused client should wait; requests here last tens of milliseconds.
RETRY_AFTER_SECONDS: Final = 1
# The scope's key of the request's Slot.
SLOT: Final = "hr.in_flight"


class Slot:
    """One request's place among those in flight, given back once (by its stream, or when it ends)."""

    def __init__(self, cap: MaxConcurrentRequests) -> None:
        self.cap = cap
        self.held = True
        cap.in_flight += 1

    def release(self) -> None:
        if self.held:
            self.held = False
            self.cap.in_flight -= 1


def release_slot(scope: Scope) -> None:
    """Give the request's slot back: it is a stream that outlives requests (a subscription)."""
    slot = scope.get(SLOT)
    if isinstance(slot, Slot):
        slot.release()


class MaxConcurrentRequests:
    def __init__(self, app: ASGIApp, max_requests: int) -> None:
        self.app = app
        self.max_requests = max_requests
        self.in_flight = 0
        self._refusal = ApiError(
            Code.UNAVAILABLE, "the server is busy; retry after a second", retryable=True, limit="concurrentRequests"
        )
        self._refusal_body = orjson.dumps(error_body(self._refusal))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_requests:
            await self._refuse(scope, send)
            return
        slot = scope[SLOT] = Slot(self)
        try:
            await self.app(scope, receive, send)
        finally:
            slot.release()

    async def _refuse(self, scope: Scope, send: Send) -> None:
        headers = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())]
        await send_error(scope, send, 503, self._refusal, headers, body=self._refusal_body)
