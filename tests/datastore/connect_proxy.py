"""An HTTP CONNECT proxy and a TLS front on the loopback, for the tests of DynamoDB through a proxy.

Both run on the test's event loop and pipe real bytes: the proxy reads a ``CONNECT host:port``,
checks ``Proxy-Authorization`` when it wants credentials, opens TCP to the target, answers 200
and relays both ways, counting its tunnels; the TLS front ends TLS with a test certificate and
relays the plain bytes to DynamoDB Local, so an https endpoint is DynamoDB Local's own answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

# The longest CONNECT head the proxy reads.
_HEAD_LIMIT = 16 * 1024

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until either end closes."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int) -> None:
    upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
    await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


@asynccontextmanager
async def _serving(handler: Handler, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """``handler`` on each connection to a loopback port; every handler still running is
    cancelled at the end, so no relay outlives the test's loop."""
    running: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.add(task)  # type: ignore[arg-type]
        try:
            await handler(reader, writer)
        except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
            running.discard(task)  # type: ignore[arg-type]

    listening = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls, limit=_HEAD_LIMIT)
    try:
        yield listening.sockets[0].getsockname()[1]
    finally:
        listening.close()
        for task in list(running):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*running, return_exceptions=True)


class ConnectProxy:
    """What the proxy was asked and did: each CONNECT's target and Proxy-Authorization, the
    tunnels it opened (a tunnel is opened only once the proxy answered 200)."""

    def __init__(self, *, authorization: str | None, refuse: int | None) -> None:
        self.port = 0
        self._authorization = authorization
        self._refuse = refuse
        self.asked: list[str] = []
        self.authorizations: list[str | None] = []
        self.tunnels: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *lines = head.split("\r\n")
        method, target, _version = request_line.split(" ", 2)
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        self.asked.append(target)
        self.authorizations.append(headers.get("proxy-authorization"))
        if method != "CONNECT":
            await self._answer(writer, 405)
        elif self._refuse is not None:
            await self._answer(writer, self._refuse)
        elif self._authorization is not None and headers.get("proxy-authorization") != self._authorization:
            await self._answer(writer, 407, 'Proxy-Authenticate: Basic realm="test"\r\n')
        else:
            host, _, port = target.rpartition(":")
            upstream_reader, upstream_writer = await asyncio.open_connection(host.strip("[]"), int(port))
            self.tunnels.append(target)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    @staticmethod
    async def _answer(writer: asyncio.StreamWriter, status: int, extra: str = "") -> None:
        body = b"refused by the test's proxy"
        head = f"HTTP/1.1 {status} Refused\r\nContent-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
        writer.write(head.encode("ascii") + body)
        await writer.drain()


@asynccontextmanager
async def connect_proxy(*, authorization: str | None = None, refuse: int | None = None) -> AsyncIterator[ConnectProxy]:
    """A CONNECT proxy on the loopback: it wants ``authorization`` as Proxy-Authorization when
    given (else 407), and answers every CONNECT with ``refuse`` when given."""
    proxy = ConnectProxy(authorization=authorization, refuse=refuse)
    async with _serving(proxy.handle) as port:
        proxy.port = port
        yield proxy


@asynccontextmanager
async def tls_front(upstream_port: int, tls: ssl.SSLContext) -> AsyncIterator[int]:
    """A TLS endpoint on the loopback relaying to ``127.0.0.1:upstream_port``: its port."""

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _relay(reader, writer, "127.0.0.1", upstream_port)

    async with _serving(relay, tls=tls) as port:
        yield port
