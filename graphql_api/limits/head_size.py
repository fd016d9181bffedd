"""Bounded request heads: over MAX_HEAD_BYTES or MAX_HEADERS, HTTP 431 and the connection closed.

uvicorn bounds a head on neither parser the way a server exposed to clients must: httptools
gathers a header's value across reads for as long as it grows (a 64 MB header was answered
200, and a concurrent ``{ me { email } }`` waited 3.8 s for that process), and h11 stops at
16 kB with a plain-text 400. This mixin, placed before uvicorn's protocol class, counts the
bytes a connection sends while a head is incomplete as ``data_received`` hands them to the
parser, and never feeds the parser more than the bound: once ``max_head_bytes`` have arrived
and the head is still not complete, the answer is 431 with a GraphQL-shaped error
(``BAD_USER_INPUT``, ``limit: headBytes``), written at once, and the connection is closed.
The request line counts, so a GET's query string does too. The number of header fields is
checked once the head is complete (it is already bounded in bytes by then), before the app
sees the request: past ``max_headers``, the same 431 with ``limit: headerCount``.

After a refusal the socket is half-closed (our FIN follows the 431) and what the client
still sends is read and dropped for at most ``LINGER_SECONDS``: a client still writing its
head when we close would otherwise get a reset instead of the answer (nginx's lingering
close). Each parser says, in a subclass of its own (limits/protocols.py), whether a head is
awaited and how many of its bytes have arrived.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Final

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from graphql_api.execution.errors import ApiError, Code
from graphql_api.observability.refusals import error_body, send_json

log = logging.getLogger("hr.limits")

DEFAULT_MAX_HEAD_BYTES: Final = 32 * 1024
DEFAULT_MAX_HEADERS: Final = 100
# How long a refused connection is read (and the bytes dropped) before it is closed.
LINGER_SECONDS: Final = 2.0
STATUS: Final = 431
_STATUS_LINE: Final = b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
_CLOSE: Final = (b"connection", b"close")


def too_large(max_bytes: int) -> ApiError:
    return ApiError(
        Code.BAD_USER_INPUT,
        f"the request head is larger than {max_bytes} bytes",
        limit="headBytes",
        maxBytes=max_bytes,
    )


def too_many(max_headers: int) -> ApiError:
    return ApiError(
        Code.BAD_USER_INPUT,
        f"the request has more than {max_headers} header fields",
        limit="headerCount",
        maxHeaders=max_headers,
    )


def raw_refusal(error: ApiError) -> bytes:
    """The whole 431 response, for a head the parser never completed (no ASGI request exists)."""
    body = orjson.dumps(error_body(error))
    head = [
        _STATUS_LINE,
        b"content-type: application/json\r\n",
        b"content-length: " + str(len(body)).encode() + b"\r\n",
        b"connection: close\r\n",
        b"\r\n",
    ]
    return b"".join(head) + body


class HeadLimit:
    """The bound; ``_awaiting_head``, ``_head_bytes_received`` and ``_feeding`` are the parser's.

    Mixed in before uvicorn's protocol class, whose ``loop``, ``transport``, ``client`` and
    ``app`` it uses.
    """

    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES
    max_headers: int = DEFAULT_MAX_HEADERS
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    client: tuple[str, int] | None
    app: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refused = False
        self._linger: asyncio.TimerHandle | None = None
        # The header count is checked where uvicorn hands a complete head to the app.
        self.app = _HeaderCount(self.app, self.max_headers, self._client_name)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # lingering after the 431: read and dropped
        while data:
            if self._awaiting_head():
                room = self.max_head_bytes - self._head_bytes_received()
                if room <= 0:
                    self._refuse_head()
                    return
                piece, data = data[:room], data[room:]
                self._feeding(len(piece), awaiting_head=True)
            else:
                piece, data = data, b""
                self._feeding(len(piece), awaiting_head=False)
            super().data_received(piece)  # type: ignore[misc]  # uvicorn's protocol, after this mixin
            if self.transport.is_closing() or self._handed_over():
                return  # uvicorn refused it (a malformed request) or handed it to a WebSocket
            if self._awaiting_head() and self._head_bytes_received() >= self.max_head_bytes:
                self._refuse_head()
                return

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        super().connection_lost(exc)  # type: ignore[misc]  # uvicorn's protocol, after this mixin

    def _handed_over(self) -> bool:
        protocol: object = self.transport.get_protocol()
        return protocol is not self

    def _refuse_head(self) -> None:
        self._refused = True
        log.warning(
            "refused a request head over %d bytes from %s: HTTP 431, connection closed",
            self.max_head_bytes,
            self._client_name(),
        )
        self.transport.write(raw_refusal(too_large(self.max_head_bytes)))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._linger = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _client_name(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "an unknown client"

    def _awaiting_head(self) -> bool:
        """A request head has begun, or may begin, and is not complete yet."""
        raise NotImplementedError

    def _head_bytes_received(self) -> int:
        """Bytes of the awaited head received so far (an upper bound where the parser cannot tell)."""
        raise NotImplementedError

    def _feeding(self, count: int, *, awaiting_head: bool) -> None:
        """``count`` bytes are about to be fed to the parser, while a head is awaited or not."""


class _HeaderCount:
    """The app as uvicorn runs it, behind the header-field count."""

    def __init__(self, app: ASGIApp, max_headers: int, client_name: Callable[[], str]) -> None:
        self.app = app
        self.max_headers = max_headers
        self.client_name = client_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if len(scope.get("headers", ())) <= self.max_headers:
            await self.app(scope, receive, send)
            return
        log.warning(
            "refused a request with more than %d header fields from %s: HTTP 431, connection closed",
            self.max_headers,
            self.client_name(),
        )
        await send_json(send, STATUS, error_body(too_many(self.max_headers)), [_CLOSE])
