"""One stream reader per server instance: a lease item, and the reader's checkpoints beside it.

The workers of one instance (``server.py run`` with WORKERS=N) share a group name and race
for its lease item (``FEED#<group>`` / ``#LEASE``, datastore/kinds/layout.py). Taking it is a
conditional write on exactly the state read: the item absent, or expired (``leaseUntil``
passed), or already this holder's. Two takers that read the same expired lease cannot both
win: the loser's condition fails. The holder renews well before expiry; a holder that stops
renewing (killed, hung) loses the lease once ``leaseUntil`` passes, and the next taker's
``generation`` is one higher, so a reader that comes back can tell it was replaced.

The lease's times are the holders' own clocks: every process of a group runs on one host.

Checkpoints (``FEED#<group>`` / ``SHARD#<shard>``) record the last sequence number of each
shard the reader handed on, so a new holder goes on where the last one stopped. Both kinds
carry the table's TTL attribute, so a group whose processes are all gone leaves nothing
behind for long.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Final

from datastore.errors import Conflict
from datastore.kinds import layout
from datastore.kinds.bookkeeping import FeedCheckpoint, FeedLease
from datastore.table import transact, updates
from datastore.table.scoped import Table
from datastore.tenancy.scope import FeedScope
from datastore.values import items
from datastore.values.items import Item, timestamp

# How long an abandoned group's items outlive their last write (the stream keeps 24 hours).
KEEP_FOR: Final = timedelta(days=2)
_GROUP_CHARACTERS: Final = re.compile(r"[^A-Za-z0-9._-]")

Clock = Callable[[], datetime]


def group_name(*parts: object) -> str:
    """A group name from what identifies a server instance (host, supervisor pid, start time)."""
    return _GROUP_CHARACTERS.sub("_", "-".join(str(part) for part in parts))


def holder_name(pid: int | None = None, started: int | str | None = None) -> str:
    """This process as a lease holder: its pid, and its start time when known (a pid is reused)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}" if started is None else f"{pid}-{started}"


class LeaseLost(Conflict):
    """The lease was taken by another holder, or expired, since this holder last had it."""


class Lease:
    def __init__(self, table: Table, group: str, holder: str, seconds: float, *, clock: Clock = items.now) -> None:
        self.table = table.with_scope(FeedScope(group))
        self.group = group
        self.holder = holder
        self.seconds = seconds
        self.clock = clock
        # The generation of the lease this holder holds; None while it holds none.
        self.generation: int | None = None

    @property
    def held(self) -> bool:
        return self.generation is not None

    async def current(self) -> FeedLease | None:
        """The lease item as it is now (one strongly consistent GetItem)."""
        found = await self.table.get(layout.FEED_LEASE.key_at(self.group), consistent=True)
        return None if found is None else layout.FEED_LEASE.read(found)

    async def acquire(self) -> bool:
        """Take the lease if it is free, expired or ours (renewing it); True when this holder has it.

        Ours is the generation this object holds, not merely our holder name: a hub started
        again in the same process (or a holder that lost its lease and takes it back) gets a
        new generation, so its reader's socket is a new address and never one a stale reader
        of the old generation may still have bound.
        """
        now = self.clock()
        found = await self.current()
        ours = found is not None and found.holder == self.holder and found.generation == self.generation
        if found is not None and not ours and found.lease_until > now:
            self.generation = None
            return False
        generation = 1 if found is None else found.generation + (not ours)
        lease = FeedLease(
            group=self.group,
            holder=self.holder,
            lease_until=now + timedelta(seconds=self.seconds),
            generation=generation,
            taken_at=found.taken_at if found is not None and ours else now,
            expires_at=now + KEEP_FOR,
        )
        if found is None:
            condition, values = "attribute_not_exists(PK)", None
        else:
            # Exactly the state read: another taker that read it too loses here.
            condition = "holder = :holder AND generation = :generation AND leaseUntil = :until"
            values = {
                ":holder": {"S": found.holder},
                ":generation": items.n(found.generation),
                ":until": {"S": timestamp(found.lease_until)},
            }

        def taken(_old: Item | None) -> LeaseLost:
            return LeaseLost(f"the stream lease of {self.group} was taken meanwhile")

        try:
            put = transact.put(layout.FEED_LEASE.item(lease), condition=condition, values=values, on_failed=taken)
            await self.table.write([put])
        except LeaseLost:
            self.generation = None
            return False
        self.generation = generation
        return True

    async def renew(self) -> None:
        """Extend the lease this holder holds; LeaseLost when it no longer does."""
        if self.generation is None:
            raise LeaseLost(f"{self.holder} holds no stream lease of {self.group}")
        now = self.clock()
        generation = self.generation

        def lost(_old: Item | None) -> LeaseLost:
            return LeaseLost(f"the stream lease of {self.group} was taken over or expired")

        try:
            await self.table.write(
                [
                    transact.update(
                        layout.FEED_LEASE.key_at(self.group),
                        [
                            updates.Set("leaseUntil", {"S": timestamp(now + timedelta(seconds=self.seconds))}),
                            updates.Set("expiresAt", items.n(int((now + KEEP_FOR).timestamp()))),
                        ],
                        condition="holder = :holder AND generation = :generation AND leaseUntil > :now",
                        values={
                            ":holder": {"S": self.holder},
                            ":generation": items.n(generation),
                            ":now": {"S": timestamp(now)},
                        },
                        on_failed=lost,
                    )
                ]
            )
        except LeaseLost:
            self.generation = None
            raise

    async def release(self) -> None:
        """Give the lease up at once (a clean stop): it expires now, so another process need not
        wait, and the next taker's generation is still one higher."""
        if self.generation is None:
            return
        generation, self.generation = self.generation, None

        def gone(_old: Item | None) -> LeaseLost:
            return LeaseLost("already taken over")

        with contextlib.suppress(LeaseLost):
            await self.table.write(
                [
                    transact.update(
                        layout.FEED_LEASE.key_at(self.group),
                        [updates.Set("leaseUntil", {"S": timestamp(self.clock() - timedelta(milliseconds=1))})],
                        condition="holder = :holder AND generation = :generation",
                        values={
                            ":holder": {"S": self.holder},
                            ":generation": items.n(generation),
                        },
                        on_failed=gone,
                    )
                ]
            )


class Checkpoints:
    """The reader's position in each shard of a stream, for its group."""

    def __init__(self, table: Table, group: str, *, clock: Clock = items.now) -> None:
        self.table = table.with_scope(FeedScope(group))
        self.group = group
        self.clock = clock

    async def load(self, stream_arn: str) -> dict[str, str]:
        """Shard id to the last sequence number handed on, for ``stream_arn`` (a Query of the group)."""
        found: dict[str, str] = {}
        start = None
        partition = layout.FEED_CHECKPOINT.partition(self.group)
        while True:
            result = await self.table.query(
                partition, sk_prefix=layout.FEED_CHECKPOINT.sort_prefix, limit=100, start_key=start, consistent=True
            )
            for item in result.items:
                checkpoint = layout.FEED_CHECKPOINT.read(item)
                if checkpoint.stream_arn == stream_arn:
                    found[checkpoint.shard_id] = checkpoint.sequence_number
            if not result.has_more:
                return found
            start = self.table.start_key_of(result.items[-1])

    async def save(self, stream_arn: str, shard_id: str, sequence_number: str) -> None:
        now = self.clock()
        checkpoint = FeedCheckpoint(self.group, shard_id, stream_arn, sequence_number, now, now + KEEP_FOR)
        await self.table.write([transact.put(layout.FEED_CHECKPOINT.item(checkpoint))])
