"""One live connection: a WebSocket, or one subscription over HTTP (over_http.py).

It holds what every subscription on it shares: the caller, the count of events queued for it
and not yet delivered (bounded: SUBSCRIPTION_QUEUE_EVENTS), and how it is closed. Closing
is the transport's (``closer``): a WebSocket close frame with the code, or the HTTP
stream's last result, its error. ``close`` may be
called from anywhere, any number of times; the first reason wins and the transport is asked
once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from graphql_api.request.principal import Principal
from graphql_api.subscriptions import live_metrics
from graphql_api.subscriptions.closing import Close, Closed

log = logging.getLogger("hr.live")

Closer = Callable[[Closed], Awaitable[None]]


@dataclass(eq=False)
class LiveConnection:
    principal: Principal
    max_queued: int
    closer: Closer
    opened: float = field(default_factory=time.monotonic)
    queued: int = 0
    closed: Closed | None = None
    subscriptions: int = 0
    _closing: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def org_id(self) -> str:
        assert self.principal.org_id is not None
        return self.principal.org_id

    def enqueue(self) -> bool:
        """Count one more event waiting for delivery; False (and the connection closed SLOW) past the bound."""
        if self.closed is not None:
            return False
        if self.queued >= self.max_queued:
            undelivered = f"more than {self.max_queued} events undelivered: resume with your last cursor"
            self.close(Closed(Close.SLOW, undelivered))
            return False
        self.queued += 1
        return True

    def dequeue(self) -> None:
        self.queued = max(0, self.queued - 1)

    def close(self, why: Closed) -> None:
        if self.closed is not None:
            return
        self.closed = why
        live_metrics.closed(why.close)
        log.info("live connection of %s closed: %s %s", self.principal.subject, why.close.code, why.detail)
        self._closing = asyncio.ensure_future(self.closer(why))

    async def until_closed(self) -> None:
        """Once ``close`` was called: until the transport has been asked to close."""
        if self._closing is not None:
            await self._closing
