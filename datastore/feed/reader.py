"""Reading the table's stream: shards in lineage order, a position per shard, checkpoints.

``StreamReader.poll`` reads every shard that may be read now (``shards.readable``: a parent
to its end before its children) once, and returns their records in that order; the caller
hands them on and then calls ``checkpoint``, which records each shard's last sequence number
(datastore/feed/lease.py), so a reader that takes over after a crash starts after what was
handed on, never before what was read.

Where a shard starts: after its checkpoint when there is one; else, for a shard open when the
reader starts, at LATEST (what happened before the reader is the audit trail's to tell); a
shard closed by then is past; a shard that appears later (a child, or the shards of a stream
turned on again) is read from its start (TRIM_HORIZON).

What the reader survives, on AWS and on DynamoDB Local alike:

- an iterator that expired (15 minutes unused): a fresh one after the shard's position;
- a position trimmed away (TrimmedDataAccessException: older than the stream's 24 hours, and
  DynamoDB Local's answer for LATEST on a stream with no records yet): the shard is read from
  its oldest record, and the gap is reported (``gaps``);
- a shard without iterators (ResourceNotFoundException: trimmed, or a closed shard DynamoDB
  Local no longer serves): finished;
- a stream turned off and on (a new LatestStreamArn): the new stream's shards from their
  start, and a gap reported;
- throttling (LimitExceededException, more than two readers on a shard): that shard waits
  for the next poll.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from datastore.feed.lease import Checkpoints
from datastore.feed.records import StreamRecord
from datastore.feed.shards import Shard, readable
from datastore.kinds import layout
from datastore.upkeep import provision

T = TypeVar("T")

if TYPE_CHECKING:
    from botocore.exceptions import ClientError
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("hr.feed")

EXPIRED: Final = "ExpiredIteratorException"
TRIMMED: Final = "TrimmedDataAccessException"
NOT_FOUND: Final = "ResourceNotFoundException"
THROTTLED: Final = ("LimitExceededException", "ThrottlingException", "ProvisionedThroughputExceededException")
# The readers' own items: reading past them is no progress worth a checkpoint, and a checkpoint
# written for them would be one more of them to read (a reader of a quiet table would write one
# per poll, for ever).
BOOKKEEPING: Final = frozenset({layout.FEED_LEASE.tag, layout.FEED_CHECKPOINT.tag})


class NoStream(Exception):
    """The table has no stream: live updates have nothing to read."""


@dataclass(frozen=True, slots=True)
class Start:
    """Where a shard's reading starts: an iterator type, and the sequence number it is after."""

    kind: str  # AFTER_SEQUENCE_NUMBER, LATEST or TRIM_HORIZON
    after: str | None = None


@dataclass
class StreamReader:
    # The low-level "dynamodbstreams" client (datastore/aws/control_plane.py), and the table's own client.
    streams: Any
    client: DynamoDBClient
    table_name: str
    checkpoints: Checkpoints | None = None
    batch: int = 1000
    # How often DescribeStream looks for new shards (and the table for a new stream).
    describe_every: float = 10.0
    clock: Callable[[], float] = time.monotonic
    # Where the stream's blocking calls run (None: the loop's default executor).
    pool: Executor | None = None

    stream_arn: str | None = field(default=None, init=False)
    shards: list[Shard] = field(default_factory=list, init=False)
    finished: set[str] = field(default_factory=set, init=False)
    # The last sequence number handed on per shard, and the ones checkpointed.
    positions: dict[str, str] = field(default_factory=dict, init=False)
    saved: dict[str, str] = field(default_factory=dict, init=False)
    # Gaps the reader could not avoid (a position trimmed away, a stream turned off and on).
    gaps: list[str] = field(default_factory=list, init=False)
    # Shards whose position moved past a record other than the readers' own since their checkpoint.
    _progressed: set[str] = field(default_factory=set, init=False)
    _starts: dict[str, Start] = field(default_factory=dict, init=False)
    _iterators: dict[str, str] = field(default_factory=dict, init=False)
    _described_at: float = field(default=float("-inf"), init=False)

    # --- the stream and its shards -------------------------------------------------------------

    async def start(self) -> None:
        """Find the stream and where each of its shards starts (checkpoints first). NoStream without one.

        The stream's own calls (boto3's, aiodynamo has no Streams API) run on ``pool``; the
        checkpoints are items of the table, read on the loop."""
        arn = await self._blocking(provision.stream_arn, self.client, self.table_name)
        if arn is None:
            raise NoStream(
                f"table {self.table_name} has no stream: run `python server.py migrate` (or `server.py run`, "
                "which turns it on) so live updates have something to read"
            )
        saved = {} if self.checkpoints is None else await self.checkpoints.load(arn)
        await self._blocking(self._begin, arn, saved)

    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def _begin(self, arn: str, saved: dict[str, str]) -> None:
        self._switch(arn)
        self.saved = dict(saved)
        for shard in self._describe():
            self._place(shard, saved, at_start=True)
        # LATEST is now, not whenever the first poll comes: take those iterators at once.
        for shard in self.shards:
            start = self._starts.get(shard.shard_id)
            if start is not None and start.kind == "LATEST" and shard.shard_id not in self.finished:
                iterator = self._iterator(shard)
                if iterator is not None:
                    self._iterators[shard.shard_id] = iterator

    def _switch(self, arn: str) -> None:
        self.stream_arn = arn
        self.shards, self.finished, self.positions, self.saved = [], set(), {}, {}
        self._starts, self._iterators, self._progressed = {}, {}, set()

    def _place(self, shard: Shard, saved: dict[str, str], *, at_start: bool) -> None:
        self.shards.append(shard)
        after = saved.get(shard.shard_id)
        if after is not None:
            self._starts[shard.shard_id] = Start("AFTER_SEQUENCE_NUMBER", after)
            self.positions[shard.shard_id] = after
        elif at_start and shard.closed:
            self.finished.add(shard.shard_id)  # read to its end before this reader began
        elif at_start:
            self._starts[shard.shard_id] = Start("LATEST")
        else:
            self._starts[shard.shard_id] = Start("TRIM_HORIZON")

    def _describe(self) -> list[Shard]:
        found: list[Shard] = []
        start: str | None = None
        while True:
            params: dict[str, Any] = {"StreamArn": self.stream_arn}
            if start is not None:
                params["ExclusiveStartShardId"] = start
            description = self.streams.describe_stream(**params)["StreamDescription"]
            found += [Shard.of(shard) for shard in description.get("Shards", [])]
            start = description.get("LastEvaluatedShardId")
            if start is None:
                self._described_at = self.clock()
                return found

    def refresh(self) -> None:
        """Look for new shards, and for a new stream (turned off and on again).

        A stream turned off keeps its records: its shards are read to their end first. Then
        the reader moves to the new stream, from its start, and reports the gap (writes while
        no stream was on are in no stream); with no new stream, NoStream.
        """
        arn = provision.stream_arn(self.client, self.table_name)
        old_done = all(shard.shard_id in self.finished for shard in self.shards)
        if arn != self.stream_arn and old_done:
            if arn is None:
                self._described_at = self.clock()
                raise NoStream(f"the stream of table {self.table_name} was turned off")
            self.gaps.append(f"the table's stream changed ({self.stream_arn} to {arn}); writes between are in neither")
            log.warning("stream of %s changed to %s: reading the new one from its start", self.table_name, arn)
            self._switch(arn)
        known = {shard.shard_id for shard in self.shards}
        described = self._describe()
        # Each shard as described now (one closed since finishes once read to its end); shards
        # no longer listed were trimmed.
        self.shards = []
        for shard in described:
            if shard.shard_id in known:
                self.shards.append(shard)
            else:
                self._place(shard, {}, at_start=False)

    # --- reading ---------------------------------------------------------------------------------

    async def poll(self) -> list[StreamRecord]:
        """One pass over the shards that may be read now: their new records, in lineage order."""
        if self.stream_arn is None:
            await self.start()
        return await self._blocking(self._poll)

    def _poll(self) -> list[StreamRecord]:
        if self.clock() - self._described_at >= self.describe_every:
            self.refresh()
        records: list[StreamRecord] = []
        for shard in readable(self.shards, self.finished):
            records += self._read(shard)
        return records

    def _read(self, shard: Shard) -> list[StreamRecord]:
        # botocore's errors are imported where the stream is read: a serving process imports this
        # module at start, and reads the stream, if at all, only once it serves.
        from botocore.exceptions import ClientError

        shard_id = shard.shard_id
        for _attempt in range(2):
            iterator = self._iterators.get(shard_id) or self._iterator(shard)
            if iterator is None:
                return []
            try:
                response = self.streams.get_records(ShardIterator=iterator, Limit=self.batch)
            except ClientError as error:
                code = _code(error)
                if code in THROTTLED:
                    return []  # the same iterator, next poll
                self._iterators.pop(shard_id, None)
                if code == EXPIRED:
                    self._expired(shard)
                    continue  # a fresh iterator after the position
                if code == TRIMMED:
                    self._trimmed(shard)
                    continue
                if code == NOT_FOUND:
                    self._finish(shard_id)
                    return []
                raise
            next_iterator = response.get("NextShardIterator")
            records = [StreamRecord.of(raw, shard_id) for raw in response.get("Records", [])]
            if records:
                self.positions[shard_id] = records[-1].sequence_number
                if any(record.kind not in BOOKKEEPING for record in records):
                    self._progressed.add(shard_id)
            if next_iterator is None:
                self._finish(shard_id)  # a closed shard, read to its end
            else:
                self._iterators[shard_id] = next_iterator
            return records
        return []

    def _iterator(self, shard: Shard) -> str | None:
        from botocore.exceptions import ClientError

        shard_id = shard.shard_id
        position = self.positions.get(shard_id)
        start = Start("AFTER_SEQUENCE_NUMBER", position) if position is not None else self._starts[shard_id]
        params: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": shard_id, "ShardIteratorType": start.kind}
        if start.after is not None:
            params["SequenceNumber"] = start.after
        try:
            iterator: str | None = self.streams.get_shard_iterator(**params).get("ShardIterator")
        except ClientError as error:
            code = _code(error)
            if code == TRIMMED and start.kind != "TRIM_HORIZON":
                self._trimmed(shard)
                return self._iterator(shard)
            if code == NOT_FOUND:
                self._finish(shard_id)
                return None
            if code in THROTTLED:
                return None
            raise
        if iterator is None:  # a shard without iterators: nothing more will come from it
            self._finish(shard_id)
        return iterator

    def _expired(self, shard: Shard) -> None:
        """An iterator expired: a fresh one after the position, or, with none yet, at LATEST again,
        which may pass over records written since the first: a gap, reported."""
        shard_id = shard.shard_id
        if shard_id not in self.positions and self._starts.get(shard_id, Start("")).kind == "LATEST":
            self.gaps.append(f"shard {shard_id}: its first iterator expired before any record was read")

    def _trimmed(self, shard: Shard) -> None:
        """The shard's position is older than what the stream keeps: read it from its oldest record."""
        shard_id = shard.shard_id
        lost = self.positions.pop(shard_id, None)
        if self._starts.get(shard_id, Start("")).kind != "LATEST" or lost is not None:
            self.gaps.append(f"shard {shard_id}: records after {lost or 'its start'} were trimmed before being read")
        self._starts[shard_id] = Start("TRIM_HORIZON")

    def _finish(self, shard_id: str) -> None:
        self.finished.add(shard_id)
        self._iterators.pop(shard_id, None)
        self._described_at = float("-inf")  # its children, if any, are listed by now

    # --- checkpoints -----------------------------------------------------------------------------

    @property
    def checkpoint_due(self) -> bool:
        """Whether ``checkpoint`` may have something to write: a shard moved past something
        other than the readers' own items since it was last recorded. False after an empty
        poll, so the reader's loop skips the hop to a thread (4 a second on an idle server)."""
        return self.checkpoints is not None and self.stream_arn is not None and bool(self._progressed)

    async def checkpoint(self) -> int:
        """Record the position of each shard that moved past something other than the readers'
        own items since it was last recorded; how many were written."""
        if self.checkpoints is None or self.stream_arn is None:
            return 0
        written = 0
        for shard_id in sorted(self._progressed):
            position = self.positions.get(shard_id)
            if position is not None and self.saved.get(shard_id) != position:
                await self.checkpoints.save(self.stream_arn, shard_id, position)
                self.saved[shard_id] = position
                written += 1
        self._progressed.clear()
        return written

    def take_gaps(self) -> list[str]:
        gaps, self.gaps = self.gaps, []
        return gaps


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
