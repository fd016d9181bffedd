"""uvicorn's two HTTP protocols with our guards on the request head: its time and its size.

Each class is uvicorn's protocol (httptools, the default, or h11) behind two mixins: the
header timeout (limits/header_timeout.py) and the head bounds (limits/head_size.py). Each
says what only its parser knows: when a head is complete, and how much of one has arrived.
``configured`` gives the class with an ApiSettings' bounds, for ``uvicorn.run(http=...)``;
spawned workers import theirs by path (graphql_api/entrypoints/worker_protocol.py).
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from graphql_api.limits.head_size import HeadLimit
from graphql_api.limits.header_timeout import HeaderTimer
from graphql_api.settings.api import ApiSettings, HttpImplementation


class GuardedHttpToolsProtocol(HeaderTimer, HeadLimit, HttpToolsProtocol):
    """uvicorn's httptools protocol with a bounded head.

    httptools calls back at a message's first byte, at its head's end and at its end; it
    does not say where in a read these fell. Bytes fed while a head is awaited are counted
    as they are fed (a read is cut at the bound); when a head begins in the same read as the
    previous request ends (pipelining), that whole read is counted, an upper bound.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._piece = 0  # the size of the read (or part of one) being fed
        self._heads = 0
        self._heads_when_armed = 0
        super().__init__(*args, **kwargs)

    def on_message_begin(self) -> None:
        self._head_bytes = max(self._head_bytes, self._piece)
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._heads += 1
        self._in_head, self._head_bytes = False, 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._head_bytes = True, 0

    def _awaiting_head(self) -> bool:
        return self._in_head

    def _head_bytes_received(self) -> int:
        return self._head_bytes

    def _feeding(self, count: int, *, awaiting_head: bool) -> None:
        self._piece = count
        if awaiting_head:
            self._head_bytes += count

    # The header timer: a head arrived when the count of completed heads moved since it was armed.
    def _head_expected(self) -> None:
        self._heads_when_armed = self._heads

    def _head_arrived(self) -> bool:
        return self._heads != self._heads_when_armed


class GuardedH11Protocol(HeaderTimer, HeadLimit, H11Protocol):
    """uvicorn's h11 protocol with a bounded head.

    While h11 awaits a request (its client state IDLE) it keeps the unparsed head in its
    buffer, so the head's bytes so far are exactly that buffer's length. h11's own bound
    (``h11_max_incomplete_event_size``) is set to ours (graphql_api/entrypoints/serving.py), so ours
    answers first, with the coded 431.
    """

    def _awaiting_head(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def _head_bytes_received(self) -> int:
        return len(self.conn.trailing_data[0])

    # The header timer: a head arrived when h11's client state has left IDLE.
    def _head_arrived(self) -> bool:
        return self.conn.their_state is not h11.IDLE

    def _close(self) -> None:
        # If h11 has already given up on this connection, close the socket all the same.
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()


PROTOCOLS: Final[dict[HttpImplementation, type[HeaderTimer]]] = {
    "httptools": GuardedHttpToolsProtocol,
    "h11": GuardedH11Protocol,
}


def configured(settings: ApiSettings) -> type[Any]:
    """The protocol class to pass as uvicorn's ``http=``, with ``settings``' parser and bounds."""
    base = PROTOCOLS[settings.http_implementation]
    bounds = {
        "header_timeout_seconds": settings.header_timeout_seconds,
        "max_head_bytes": settings.max_head_bytes,
        "max_headers": settings.max_headers,
    }
    return type(base.__name__, (base,), bounds)
