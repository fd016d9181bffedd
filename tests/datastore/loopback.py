"""A loopback HTTP/1.1 server for the DynamoDB clients' transport tests: a script of ours
runs on each connection it accepts, so a test can answer anything, well formed or not."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

# Serves one connection: reads requests from the reader, writes what it likes.
Script = Callable[["Server", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """A loopback server running ``script`` on each connection it accepts, counting them."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.open_now = 0
        self.most_open = 0
        self.requests: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            await self.script(self, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client closed, or the test's loop ended
        finally:
            self.open_now -= 1
            writer.close()

    async def request(self, reader: asyncio.StreamReader) -> bytes:
        """One request's body (the client always sends Content-Length)."""
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        )
        body = await reader.readexactly(length)
        self.requests.append(head + body)
        return body


@asynccontextmanager
async def serving(script: Script, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[tuple[Server, int]]:
    server = Server(script)
    listening = await asyncio.start_server(server.serve, "127.0.0.1", 0, ssl=tls)
    try:
        yield server, listening.sockets[0].getsockname()[1]
    finally:
        listening.close()


def replying(raw: bytes, *, then_close: bool = False) -> Script:
    """A script answering the first request with ``raw`` as it is, then closing, or waiting
    for the client to close."""

    async def script(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.request(reader)
        writer.write(raw)
        await writer.drain()
        if not then_close:
            await reader.read()

    return script


def answer(body: bytes = b"{}", *, status: int = 200, extra: str = "") -> bytes:
    return f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body
