"""The reader hands every record to every worker of its server instance over a Unix socket.

Why a socket and not a ring in shared memory: a worker waits on a socket without polling
(the event loop wakes it when a frame arrives), the kernel keeps each worker's backlog apart,
frames of any size need no slot arithmetic, and a worker that dies is a closed connection
rather than a reader position left behind in a shared ring. The rate is a table's write rate
(tens of records a second for the whole platform), far below what a ring would be for.

The socket is in Linux's abstract namespace: no file to create, protect or clean up after a
crash (the name goes when its process does). Its name carries the group and the lease's
generation, so a new reader never needs the name of one that is gone or hung, and workers
find the current one from the lease item (datastore/feed/host.py).

A frame is ``>I`` length, then one type byte: ``R`` a record (a byte-counted organisation id,
a byte-counted kind, then the record's bytes, datastore/feed/records.py), ``G`` a gap the
reader could not avoid (its description). The organisation comes first so a worker drops a
record of an organisation it serves no subscriber of without decoding it.

A worker that does not keep up (its connection's unsent bytes past MAX_BACKLOG_BYTES) is
disconnected rather than allowed to hold the reader or the other workers up: it reconnects,
and treats the disconnection as a gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

log = logging.getLogger("hr.feed")

RECORD: Final = b"R"
GAP: Final = b"G"
_LENGTH: Final = struct.Struct(">I")
MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
# Unsent bytes one worker's connection may hold before it is cut off.
MAX_BACKLOG_BYTES: Final = 8 * 1024 * 1024


def address(group: str, generation: int) -> str:
    """The abstract socket name of a group's reader of one lease generation."""
    return f"\0hr-feed-{group}-{generation}"


def record_frame(org_id: str | None, kind: str | None, body: bytes) -> bytes:
    org = (org_id or "").encode()
    tag = (kind or "").encode()
    payload = RECORD + bytes([len(org)]) + org + bytes([len(tag)]) + tag + body
    return _LENGTH.pack(len(payload)) + payload


def gap_frame(description: str) -> bytes:
    payload = GAP + description.encode()
    return _LENGTH.pack(len(payload)) + payload


@dataclass(frozen=True, slots=True)
class Frame:
    type: bytes
    org_id: str | None = None
    kind: str | None = None
    body: bytes = b""


def parse(payload: bytes) -> Frame:
    """A frame's payload (after its length); the record's body is left as bytes."""
    kind = payload[:1]
    if kind == GAP:
        return Frame(GAP, body=payload[1:])
    if kind != RECORD:
        raise ValueError(f"unknown frame type {kind!r}")
    org_length = payload[1]
    org = payload[2 : 2 + org_length].decode()
    tag_at = 2 + org_length
    tag_length = payload[tag_at]
    tag = payload[tag_at + 1 : tag_at + 1 + tag_length].decode()
    return Frame(RECORD, org or None, tag or None, payload[tag_at + 1 + tag_length :])


async def read_frame(reader: asyncio.StreamReader) -> Frame:
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    if length > MAX_FRAME_BYTES:
        raise ValueError(f"a frame of {length} bytes")
    return parse(await reader.readexactly(length))


class FanoutServer:
    """The reader's end: every connected worker gets every frame broadcast."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(self.name)
        except OSError:
            sock.close()
            raise
        self._server = await asyncio.start_unix_server(self._accepted, sock=sock)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await reader.read()  # workers send nothing: this returns when one goes away
        except (ConnectionError, OSError):
            pass
        finally:
            self._drop(writer)

    def _drop(self, writer: asyncio.StreamWriter) -> None:
        self._writers.discard(writer)
        with contextlib.suppress(Exception):
            writer.close()

    @property
    def workers(self) -> int:
        return len(self._writers)

    def broadcast(self, frames: list[bytes]) -> None:
        """Queue ``frames`` to every worker; one whose backlog is too long is cut off."""
        if not frames:
            return
        data = b"".join(frames)
        for writer in list(self._writers):
            if writer.transport.get_write_buffer_size() + len(data) > MAX_BACKLOG_BYTES:
                log.warning("a worker fell %d bytes behind the stream reader: disconnected", MAX_BACKLOG_BYTES)
                self._drop(writer)
                continue
            writer.write(data)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            self._drop(writer)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None


async def follow(name: str, on_frame: Callable[[Frame], None]) -> None:
    """Connect to the reader named ``name`` and hand each frame on until the connection ends.

    ConnectionError (or OSError) when there is no such reader; returns when it goes away.
    """
    # A socket of our own, connected here: uvloop refuses an abstract name given as a path.
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(sock, name)
    except OSError:
        sock.close()
        raise
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    try:
        while True:
            try:
                frame = await read_frame(reader)
            except asyncio.IncompleteReadError:
                return
            on_frame(frame)
    finally:
        with contextlib.suppress(Exception):
            writer.close()
