"""Workers of one server instance, each a FeedHost: one reads, every one receives, a takeover loses nothing.

Each worker is a FeedHost in this test's event loop (the workers of ``server.py run`` are
processes; tests/test_live_workers.py kills one for real). They share one group, so one lease.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.config import FeedSettings
from datastore.errors import Unavailable
from datastore.feed.fanout import RECORD, Frame
from datastore.feed.host import FeedHost
from datastore.feed.lease import KEEP_FOR, Checkpoints, group_name
from datastore.feed.records import StreamRecord
from datastore.kinds import layout
from datastore.kinds.bookkeeping import FeedLease
from datastore.table import transact
from datastore.table.scoped import Table
from datastore.tenancy.scope import FeedScope, LayoutScope
from datastore.upkeep import provision
from datastore.values import ids, items
from tests.blocking import run
from tests.waiting import until

SETTINGS = FeedSettings(lease_seconds=1.5, poll_seconds=0.05)


@dataclass
class Worker:
    host: FeedHost
    labels: list[str] = field(default_factory=list)
    connected: int = 0
    task: asyncio.Task[None] | None = None

    def on_frame(self, frame: Frame) -> None:
        if frame.type != RECORD:
            return
        image = StreamRecord.decode(frame.body).new_image or {}
        if "label" in image:
            self.labels.append(image["label"]["S"])

    def on_connected(self) -> None:
        self.connected += 1

    def start(self) -> None:
        self.task = asyncio.create_task(self.host.run(self.on_frame, self.on_connected))

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def worker(table: Table, streams: Any, client: DynamoDBClient, group: str, holder: str) -> Worker:
    return Worker(FeedHost(table, lambda: streams, lambda: client, group, holder, SETTINGS))


def mark(table: Table, label: str) -> None:
    run(
        table.with_scope(LayoutScope()).write(
            [transact.put({"PK": {"S": "LAYOUT"}, "SK": {"S": f"MARK#{label}"}, "label": items.s(label)})]
        )
    )


async def write(table: Table, label: str) -> None:
    await asyncio.to_thread(mark, table, label)


def test_workers__one_reads__every_worker_gets_every_record(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    group = group_name("test", ids.new_id())

    async def scenario() -> list[Worker]:
        workers = [worker(own_table, streams, client, group, f"{n}-1") for n in range(3)]
        for each in workers:
            each.start()
        await until(lambda: all(each.host.status.connected for each in workers))
        for n in range(5):
            await write(own_table, f"m{n}")
        await until(lambda: all(len(each.labels) == 5 for each in workers))
        for each in workers:
            await each.stop()
        return workers

    workers = asyncio.run(scenario())
    assert [each.labels for each in workers] == [[f"m{n}" for n in range(5)]] * 3
    assert sum(each.host.status.records_read > 0 for each in workers) == 1  # one reader
    assert all(each.connected == 1 for each in workers)


def test_reader_stops__another_takes_over_from_its_checkpoint__the_others_get_everything(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    group = group_name("test", ids.new_id())

    async def scenario() -> tuple[Worker, Worker]:
        first, second = (
            worker(own_table, streams, client, group, "1-1"),
            worker(own_table, streams, client, group, "2-1"),
        )
        first.start()
        await until(lambda: first.host.status.reading and first.host.status.connected)
        second.start()
        await until(lambda: second.host.status.connected)
        await write(own_table, "before")
        await until(lambda: second.labels == ["before"])
        await first.stop()  # the reader goes (its lease given up)
        await write(own_table, "during")  # written while nobody reads
        await until(lambda: second.host.status.reading)
        await write(own_table, "after")
        await until(lambda: second.labels[-1:] == ["after"])
        await second.stop()
        return first, second

    first, second = asyncio.run(scenario())
    assert second.labels == ["before", "during", "after"]  # from the checkpoint: nothing lost
    assert second.connected == 2  # reconnected to the new reader (its own)
    assert first.host.lease.generation is None


def test_checkpoint_write_fails__the_reader_reads_on__recorded_after_the_next_batch(
    own_table: Table, streams: Any, monkeypatch: pytest.MonkeyPatch, client: DynamoDBClient
) -> None:
    # DynamoDB not answering one checkpoint write (a timeout on a loaded host): before, the
    # reading task ended on it while its worker kept renewing the lease, so nobody read again.
    group = group_name("test", ids.new_id())
    save = Checkpoints.save
    failures: list[str] = []

    async def save_or_fail_once(self: Checkpoints, stream_arn: str, shard_id: str, sequence_number: str) -> None:
        if not failures:
            failures.append(shard_id)
            raise Unavailable("DynamoDB did not answer in time")
        await save(self, stream_arn, shard_id, sequence_number)

    monkeypatch.setattr(Checkpoints, "save", save_or_fail_once)

    async def scenario() -> Worker:
        only = worker(own_table, streams, client, group, "1-1")
        only.start()
        await until(lambda: only.host.status.reading and only.host.status.connected)
        await write(own_table, "first")  # its checkpoint fails
        await until(lambda: only.labels == ["first"])
        await write(own_table, "second")
        await until(lambda: only.labels == ["first", "second"])
        arn = provision.stream_arn(client, own_table.name)

        async def checkpointed() -> bool:
            return len(await Checkpoints(own_table, group).load(arn)) == 1

        await until(checkpointed, 10, "the checkpoint")
        await only.stop()
        return only

    only = asyncio.run(scenario())
    assert failures and only.labels == ["first", "second"]


def test_reading_task_ends_by_itself__started_again_under_the_same_lease__nothing_lost(
    own_table: Table, streams: Any, caplog: pytest.LogCaptureFixture, client: DynamoDBClient
) -> None:
    group = group_name("test", ids.new_id())

    async def scenario() -> Worker:
        only = worker(own_table, streams, client, group, "1-1")
        only.start()
        await until(lambda: only.host.status.reading and only.host.status.connected)
        await write(own_table, "before")
        await until(lambda: only.labels == ["before"])
        generation = only.host.lease.generation
        reading = only.host._reading
        assert reading is not None
        reading.cancel()  # ended by something no retry covered
        await write(own_table, "while stopped")
        await until(lambda: only.labels[-1:] == ["while stopped"], 10, "the restarted reader")
        assert only.host.lease.generation == generation and only.host._reading is not reading
        await only.stop()
        return only

    only = asyncio.run(scenario())
    assert only.labels == ["before", "while stopped"]  # from its checkpoint, once each
    assert only.connected == 2  # followed the restarted reader's socket
    assert any("the stream reader stopped" in record.getMessage() for record in caplog.records)


def test_crashed_reader_s_lease__taken_over_once_it_expires(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    group = group_name("test", ids.new_id())
    now = items.now()
    crashed = FeedLease(group, "dead-1", now + timedelta(seconds=1), 7, now, now + KEEP_FOR)
    run(own_table.with_scope(FeedScope(group)).write([transact.put(layout.FEED_LEASE.item(crashed))]))

    async def scenario() -> Worker:
        survivor = worker(own_table, streams, client, group, "2-1")
        survivor.start()
        await until(lambda: survivor.host.status.reading)
        await until(lambda: survivor.host.status.connected)
        await write(own_table, "x")
        await until(lambda: survivor.labels == ["x"])
        await survivor.stop()
        return survivor

    survivor = asyncio.run(scenario())
    lease = run(survivor.host.lease.current())
    assert lease is not None and lease.generation == 8 and lease.holder == "2-1"
