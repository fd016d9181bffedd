"""The reader's socket: every connected worker gets every frame; one that falls behind is cut off."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest
import uvloop

from datastore.feed import fanout
from datastore.feed.fanout import GAP, RECORD, FanoutServer, Frame
from datastore.values import ids
from tests.waiting import until


def test_frames__record_and_gap__parse_back_with_the_organisation_first() -> None:
    record = fanout.record_frame("01ORG", "AuditEvent", b'{"body": 1}')
    assert fanout.parse(record[4:]) == Frame(RECORD, "01ORG", "AuditEvent", b'{"body": 1}')
    assert fanout.parse(fanout.record_frame(None, None, b"x")[4:]) == Frame(RECORD, None, None, b"x")
    assert fanout.parse(fanout.gap_frame("trimmed")[4:]) == Frame(GAP, body=b"trimmed")


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])  # uvloop: what the servers run on
def test_broadcast__every_connected_worker_gets_every_frame_in_order(loop: str) -> None:
    async def scenario() -> list[list[Frame]]:
        server = FanoutServer(fanout.address(f"test-{ids.new_id()}", 1))
        await server.start()
        received: list[list[Frame]] = [[], [], []]
        followers = [asyncio.create_task(fanout.follow(server.name, seen.append)) for seen in received]
        await until(lambda: server.workers == 3)
        server.broadcast([fanout.record_frame(f"ORG{n}", "Employee", str(n).encode()) for n in range(100)])
        server.broadcast([fanout.gap_frame("the end")])
        await until(lambda: all(len(seen) == 101 for seen in received))
        await server.close()
        for follower in followers:
            await follower  # returns when the reader goes away
        return received

    factory = uvloop.new_event_loop if loop == "uvloop" else None
    with asyncio.Runner(loop_factory=factory) as runner:
        received = runner.run(scenario())
    for seen in received:
        assert [frame.body for frame in seen[:100]] == [str(n).encode() for n in range(100)]
        assert seen[100] == Frame(GAP, body=b"the end")


def test_broadcast__worker_that_does_not_read__cut_off_and_the_others_unaffected() -> None:
    async def scenario() -> tuple[int, int]:
        server = FanoutServer(fanout.address(f"test-{ids.new_id()}", 1))
        await server.start()
        reading: list[Frame] = []
        follower = asyncio.create_task(fanout.follow(server.name, reading.append))
        # A worker that connects and never reads: its socket buffers fill, then its backlog.
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(server.name)
        _stuck_reader, stuck = await asyncio.open_unix_connection(sock=raw)
        await until(lambda: server.workers == 2)
        frame = fanout.record_frame("ORG", "Employee", b"x" * 65_536)
        sent = 0
        while server.workers == 2 and sent < 1000:
            server.broadcast([frame])
            sent += 1
            await asyncio.sleep(0)
        await until(lambda: len(reading) == sent)
        workers = server.workers
        stuck.close()
        await server.close()
        with contextlib.suppress(Exception):
            await follower
        return workers, sent

    workers, sent = asyncio.run(scenario())
    assert workers == 1  # the one that did not read was disconnected
    assert sent * 65_536 > fanout.MAX_BACKLOG_BYTES
