"""What each worker process of a server instance runs for the change feed.

Every worker races for its group's lease (datastore/feed/lease.py) every ``renew_seconds``.
The one that holds it reads the stream (datastore/feed/reader.py) and serves its records on
the group's socket (datastore/feed/fanout.py), checkpointing after each batch is handed on;
it renews the lease as it goes and stops reading the moment it cannot. Every worker, the
reader's own included, follows the socket of the lease's current generation and hands each
frame to its ``on_frame`` callback; it looks at the lease again every ``renew_seconds`` and
moves to a new generation's socket (a takeover) without waiting for the old one to close (a
hung reader keeps its socket open).

``on_connected`` is called each time a worker's connection to a reader is made (the first
time too): whatever the reader of the connection handed on before the worker was connected
is not coming, so the caller catches up from its own record of events (the API replays the
audit trail, graphql_api/subscriptions/hub.py). A reader starts its socket only once it has
its shard iterators, so what happens after a connection is made reaches the worker.

Blocking DynamoDB calls run on a pool of the feed's own, so the API's busy I/O pool never
holds the reader up, and never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from datastore.config import FeedSettings
from datastore.errors import DatastoreError
from datastore.feed import fanout
from datastore.feed.fanout import FanoutServer, Frame
from datastore.feed.lease import Checkpoints, Lease, LeaseLost
from datastore.feed.reader import NoStream, StreamReader
from datastore.table.scoped import Table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("hr.feed")
T = TypeVar("T")


@dataclass
class FeedStatus:
    """What this worker's part of the feed is doing, for health and tests."""

    reading: bool = False
    connected: bool = False
    generation: int | None = None
    records_read: int = 0
    # How far behind the stream the reader is: the age of the newest record of its last read, in
    # seconds (DynamoDB dates records to the second); 0 when that read came back empty.
    lag_seconds: float = 0.0
    frames_received: int = 0
    connections: int = 0
    problem: str | None = None


class FeedHost:
    def __init__(
        self,
        table: Table,
        streams: Callable[[], Any],
        client: Callable[[], DynamoDBClient],
        group: str,
        holder: str,
        settings: FeedSettings,
    ) -> None:
        self.table = table
        # The stream's and the control plane's boto3 clients, asked for when this process first
        # reads: a server answers its first requests before it imports boto3.
        self.streams = streams
        self.client = client
        self.group = group
        self.settings = settings
        self.lease = Lease(table, group, holder, settings.lease_seconds)
        self.status = FeedStatus()
        # The stream's own calls (boto3: aiodynamo has no Streams API); lease and checkpoints are awaited.
        self._pool = ThreadPoolExecutor(2, thread_name_prefix="feed-io")
        self._server: FanoutServer | None = None
        self._reading: asyncio.Task[None] | None = None

    async def run(self, on_frame: Callable[[Frame], None], on_connected: Callable[[], None]) -> None:
        """Lead when the lease allows, follow always; until cancelled (then the lease is given up)."""
        following = asyncio.create_task(self._follow(on_frame, on_connected))
        try:
            while True:
                await self._lead_or_wait()
                await asyncio.sleep(self.settings.renew_seconds)
        finally:
            following.cancel()
            await self._stop_reading()
            with contextlib.suppress(Exception):
                await self.lease.release()
            with contextlib.suppress(asyncio.CancelledError):
                await following
            self._pool.shutdown(wait=False)

    # --- leading ---------------------------------------------------------------------------------

    async def _lead_or_wait(self) -> None:
        try:
            if self.lease.held:
                await self.lease.renew()
                self._restart_if_stopped()
            elif await self.lease.acquire():
                log.info("feed %s: this process (%s) reads the stream", self.group, self.lease.holder)
                self._reading = asyncio.create_task(self._read(self.lease.generation or 0))
        except LeaseLost:
            log.warning("feed %s: lost the stream lease; another process reads now", self.group)
            await self._stop_reading()
        except DatastoreError as error:
            self.status.problem = f"the lease could not be read or written: {error}"
            if self.lease.held:  # unrenewed, it may expire under us: stop before it does
                self.lease.generation = None
                await self._stop_reading()

    def _restart_if_stopped(self) -> None:
        """Start the reader again, from its checkpoints, if it ended by itself while the lease is held.

        A lease must never outlive its reader: renewed by this loop, it would keep every other
        worker from reading while nobody does (live updates would stop with no error anywhere).
        Its followers reconnect to the new socket (the same generation) and catch up.
        """
        reading = self._reading
        if reading is None or not reading.done():
            return
        error = None if reading.cancelled() else reading.exception()
        self.status.problem = f"the stream reader stopped: {error!r}"
        log.error("feed %s: the stream reader stopped (%r): starting it again from its checkpoints", self.group, error)
        self._reading = asyncio.create_task(self._read(self.lease.generation or 0))

    def _clients(self) -> tuple[Any, DynamoDBClient]:
        return self.streams(), self.client()

    async def _stop_reading(self) -> None:
        reading, self._reading = self._reading, None
        if reading is not None:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reading
        self.status.reading = False

    async def _read(self, generation: int) -> None:
        # Made on the feed's pool: making a boto3 client (importing boto3, the first time) is
        # no work for the event loop.
        streams, client = await asyncio.get_running_loop().run_in_executor(self._pool, self._clients)
        reader = StreamReader(streams, client, self.table.name, Checkpoints(self.table, self.group), pool=self._pool)
        server: FanoutServer | None = None
        try:
            while server is None:
                try:
                    await reader.start()  # LATEST iterators now, before anyone follows
                    server = FanoutServer(fanout.address(self.group, generation))
                    await server.start()
                except NoStream as error:
                    self.status.problem = str(error)
                    log.error("feed %s: %s", self.group, error)
                    await asyncio.sleep(30)
                except (DatastoreError, OSError) as error:
                    self.status.problem = f"could not start reading: {error}"
                    log.warning("feed %s: could not start reading the stream: %s", self.group, error)
                    await asyncio.sleep(self.settings.renew_seconds)
            self._server = server
            self.status.reading, self.status.problem = True, None
            # The workers look for the new socket every half second: records read before they
            # are connected would reach none of them (a latecomer catches up on connecting).
            await asyncio.sleep(min(1.0, self.settings.renew_seconds))
            records = await reader.poll()
            while True:
                self._hand_on(server, records, reader.take_gaps())
                try:
                    if reader.checkpoint_due:  # not after an empty poll: no write for nothing
                        await reader.checkpoint()
                except DatastoreError as error:  # kept as progressed: recorded after the next batch
                    self.status.problem = f"a checkpoint could not be written: {error}"
                    log.warning("feed %s: a checkpoint could not be written: %s", self.group, error)
                full = len(records) >= reader.batch
                if not full:
                    await asyncio.sleep(self.settings.poll_seconds)
                try:
                    records = await reader.poll()
                except NoStream as error:
                    self.status.problem = str(error)
                    log.error("feed %s: %s", self.group, error)
                    records = []
                    await asyncio.sleep(30)
                except Exception as error:  # botocore and DynamoDB failures: retry shortly
                    self.status.problem = f"reading the stream failed: {error}"
                    log.warning("feed %s: reading the stream failed: %s", self.group, error)
                    records = []
                    await asyncio.sleep(1)
        finally:
            self._server = None
            if server is not None:
                await server.close()
                # A clean stop records where it got to, so the next reader starts right there.
                with contextlib.suppress(Exception):
                    await asyncio.shield(reader.checkpoint())

    def _hand_on(self, server: FanoutServer, records: list[Any], gaps: list[str]) -> None:
        kinds = self.settings.kinds
        frames = [fanout.gap_frame(gap) for gap in gaps]
        for record in records:
            kind = record.kind
            if kinds is None or kind in kinds:
                frames.append(fanout.record_frame(record.org_id, kind, record.encode()))
        self.status.records_read += len(records)
        if records:
            newest = records[-1].approximate_at
            self.status.lag_seconds = max(0.0, (datetime.now(UTC) - newest).total_seconds())
        else:
            self.status.lag_seconds = 0.0
        server.broadcast(frames)

    # --- following -------------------------------------------------------------------------------

    async def _follow(self, on_frame: Callable[[Frame], None], on_connected: Callable[[], None]) -> None:
        while True:
            try:
                current = await self.lease.current()
            except DatastoreError:
                current = None
            if current is None or current.lease_until < self.lease.clock():
                await asyncio.sleep(min(0.5, self.settings.renew_seconds))
                continue
            generation = current.generation
            announced = False

            def announce() -> None:
                """``on_connected`` once per connection, before its first frame is handed on: a
                new reader's first batch (all it read while nobody did) may come at once, and
                the caller's catch-up must be under way when it does."""
                nonlocal announced
                if not announced:
                    announced = True
                    self.status.connections += 1
                    on_connected()

            def received(frame: Frame) -> None:
                announce()
                self.status.frames_received += 1
                on_frame(frame)

            following = asyncio.create_task(fanout.follow(fanout.address(self.group, generation), received))
            try:
                await asyncio.sleep(0.05)  # connected, unless there is no such socket yet
                if following.done():
                    following.result()
                    continue
                self.status.connected, self.status.generation = True, generation
                announce()
                await self._until_replaced(following, generation)
            except (ConnectionError, OSError):
                await asyncio.sleep(min(0.5, self.settings.renew_seconds))
            except ValueError as error:  # a frame that does not parse: a reader of another release?
                log.error("feed %s: a bad frame from the reader: %s", self.group, error)
                await asyncio.sleep(self.settings.renew_seconds)
            finally:
                self.status.connected = False
                following.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError, ValueError):
                    await following

    async def _until_replaced(self, following: asyncio.Task[None], generation: int) -> None:
        """Wait while the connection lasts and the lease's generation is still ``generation``."""
        while not following.done():
            await asyncio.wait({following}, timeout=self.settings.renew_seconds)
            if following.done():
                break
            try:
                current = await self.lease.current()
            except DatastoreError:
                continue
            if current is not None and current.generation != generation:
                return  # taken over: the old reader may be hung with its socket open
        following.result()
