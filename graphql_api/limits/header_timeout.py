"""Time to receive a request head: a connection that dribbles its headers is closed.

Uvicorn (0.3x-0.5x) has no header-read timeout: ``timeout_keep_alive`` runs only between
requests and is cancelled by the first byte of the next one, so a client sending one
header byte a second, or connecting and sending nothing, holds its socket for as long as
it likes. This h11 protocol subclass arms a timer when a connection opens and again when a
response completes (the start of the next request on a kept-alive connection); if the timer
fires while the client has still not sent a complete request head (h11's client state is
IDLE), the connection is closed. A request whose head has arrived is not touched: its body
is bounded by limits/body_timeout.py and its work by the request's own limits.

In a deployment a proxy in front (an ALB, API Gateway, nginx's ``client_header_timeout``)
is the first line; this guard keeps the process safe when it is exposed directly.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderTimeoutProtocol(H11Protocol):
    """H11Protocol closing connections whose request head is not complete in time."""

    header_timeout_seconds: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout_seconds, self._header_timed_out)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return  # the head arrived; the body timeout and the request's limits take over
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a pipelined request is still being answered; re-armed when it completes
        # If h11 has already given up on this connection, close the socket all the same.
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()


def header_timeout_protocol(timeout_seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class to pass as uvicorn's ``http=``, with this timeout."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_seconds": timeout_seconds})
