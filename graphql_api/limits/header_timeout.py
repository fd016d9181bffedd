"""Time to receive a request head: a connection that dribbles its headers is closed.

Uvicorn (0.3x-0.5x) has no header-read timeout: ``timeout_keep_alive`` runs only between
requests and is cancelled by the first byte of the next one, so a client sending one
header byte a second, or connecting and sending nothing, holds its socket for as long as
it likes. This mixin of our protocol subclasses (of uvicorn's httptools protocol, the
default, and of its h11 one: limits/protocols.py) arms a timer when a connection opens and
again when a response completes (the start of the next request on a kept-alive connection);
if the timer fires while the client has still not sent a complete request head, the
connection is closed. A request whose head has
arrived is not touched: its body is bounded by limits/body_timeout.py and its work by the
request's own limits. Each parser only says whether a head arrived.

In a deployment a proxy in front (an ALB, API Gateway, nginx's ``client_header_timeout``)
is the first line; this guard keeps the process safe when it is exposed directly.
"""

from __future__ import annotations

import asyncio
from typing import Any


class HeaderTimer:
    """The timer; ``_head_arrived`` and ``_close`` are the parser's (one subclass each).

    Mixed in before uvicorn's protocol class, whose ``loop``, ``transport`` and ``cycle`` it uses.
    """

    header_timeout_seconds: float = 10.0
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]  # uvicorn's protocol, after this mixin
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)  # type: ignore[misc]  # uvicorn's protocol, after this mixin

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]  # uvicorn's protocol, after this mixin
        if not self.transport.is_closing():
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._head_expected()
        self._header_timer = self.loop.call_later(self.header_timeout_seconds, self._header_timed_out)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self._head_arrived():
            return  # the head arrived; the body timeout and the request's limits take over
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a pipelined request is still being answered; re-armed when it completes
        self._close()

    def _head_expected(self) -> None:
        """The timer was (re)armed: a new request head is awaited from now."""

    def _head_arrived(self) -> bool:
        raise NotImplementedError

    def _close(self) -> None:
        self.transport.close()
