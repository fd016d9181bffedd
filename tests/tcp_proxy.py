"""A small TCP proxy that misbehaves on demand, between the server and DynamoDB Local.

Runs an asyncio server on its own thread. Its ``mode`` applies to data from the client:
``PASS`` forwards; ``DELAY`` forwards each chunk ``delay`` seconds late; ``SWALLOW`` reads
requests and never forwards or answers them (the connection stays open: DynamoDB "hangs");
``DROP`` closes the connection as soon as the client sends anything. Its ``answers`` apply
to data from upstream: ``Answers.PASS`` forwards; ``MUTE`` drops the answers of requests
forwarded (DynamoDB applied the request and the client never hears); ``CUT`` closes the
client's connection when an answer comes, instead of forwarding it. ``refuse()`` stops
listening (a connection is refused: nothing is sent) until ``accept()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from enum import Enum

from datastore.dev.local import free_port


class Mode(Enum):
    PASS = "pass"
    DELAY = "delay"
    SWALLOW = "swallow"
    DROP = "drop"


class Answers(Enum):
    PASS = "pass"
    MUTE = "mute"
    CUT = "cut"


class TcpProxy:
    def __init__(self, upstream_port: int, *, delay: float = 0.0) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.mode = Mode.PASS
        self.answers = Answers.PASS
        self.delay = delay
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def refuse(self) -> None:
        """Stop listening: connections are refused until ``accept``; those open stay."""
        asyncio.run_coroutine_threadsafe(self._close_server(), self._loop).result(10)

    def accept(self) -> None:
        """Listen again, on the same port."""
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)

    async def _close_server(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._listen())
        self._started.set()
        self._loop.run_forever()
        if self._server is not None:
            self._server.close()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(asyncio.sleep(0))
        self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        back = asyncio.ensure_future(self._answer(upstream_reader, writer))
        try:
            while chunk := await reader.read(65536):
                mode = self.mode
                if mode is Mode.DROP:
                    break
                if mode is Mode.SWALLOW:
                    continue
                if mode is Mode.DELAY:
                    await asyncio.sleep(self.delay)
                upstream_writer.write(chunk)
                await upstream_writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            back.cancel()
            for end in (writer, upstream_writer):
                with contextlib.suppress(Exception):
                    end.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while chunk := await reader.read(65536):
                answers = self.answers
                if answers is Answers.CUT:
                    break
                if answers is Answers.MUTE:
                    continue
                writer.write(chunk)
                await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()
