"""One subscription's events: replayed from the audit trail, then live, none missed and none twice.

A subscription registers with the hub (hub.py) *before* it reads the audit trail, so every
write that commits after the read is on its way live; the replay reads after the position's
floor (cursors.py), strongly consistent, and a live event the replay delivered already is
skipped by the position. That is the seam: no gap, no duplicate. A catch-up (the process's
connection to the stream reader was made again, hub.py) is the same replay, queued behind
the live events already waiting, so it runs in order with them.

Live events wait in the subscription's queue, counted against the connection's bound
(connection.py): a subscriber that cannot take them as fast as they come is closed SLOW,
never dropped from silently. While a replay is due or running (a catch-up, or the replay of
``after``), live events are not queued: the replay reads them from the trail at the
subscriber's own pace, and is read again after it ends if any came meanwhile. So a failover's
burst (every event written while no reader handed any on, arriving at once, often after the
catch-up has delivered it) never counts against the bound: an event already delivered is not
queued. A failover closes nobody who keeps up.

A replay reads at most SUBSCRIPTION_REPLAY_EVENTS events of the organisation's trail and
goes back at most SUBSCRIPTION_REPLAY_SECONDS: a cursor further behind is refused
(BAD_USER_INPUT on ``after``): read the current state again and subscribe without it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final, Protocol

from datastore.kinds.entities import AuditEvent
from datastore.tenancy.scope import TenantScope
from datastore.writes import audit
from graphql_api.execution.errors import bad_input
from graphql_api.subscriptions.closing import Close, Closed
from graphql_api.subscriptions.connection import LiveConnection
from graphql_api.subscriptions.cursors import Position
from graphql_api.subscriptions.session import LiveSession, OneShot, Round

# Audit events one replay Query reads at most.
REPLAY_PAGE: Final = 100


class Topic(Protocol):
    """What one subscription listens to: its name (cursors are bound to it) and its events."""

    @property
    def name(self) -> str: ...

    def matches(self, event: AuditEvent) -> bool:
        """Cheap, and without I/O: the hub asks it of every event of the organisation."""
        ...


@dataclass(frozen=True, slots=True)
class Delivery:
    event: AuditEvent
    # The round of a live event (its loaders and call log); None for a replayed one (the session's own).
    round: Round | None


_CATCH_UP: Final = object()


@dataclass(eq=False)
class LiveStream:
    connection: LiveConnection
    topic: Topic
    position: Position
    replay_events: int
    replay_seconds: float
    # Replay from the position before anything live (subscribed with ``after``).
    replay_first: bool = False
    _queue: deque[Delivery | object] = field(default_factory=deque)
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    # A replay is due or running: live events are left to it (``offer``).
    _replaying: bool = False
    # A live event arrived while replaying: the trail is read again once the replay ends.
    _missed: bool = False

    @property
    def org_id(self) -> str:
        return self.connection.org_id

    # --- what the hub hands in (never blocks) ----------------------------------------------------

    def offer(self, event: AuditEvent, round_: Round) -> None:
        if self._replaying:
            self._missed = True  # committed before the next read of the trail, which delivers it
            return
        if self.position.seen(event.event_id):
            # Delivered by a replay already: a new reader's first batch repeats what the catch-up
            # read from the trail, and is not counted against the bound.
            return
        if self.connection.enqueue():
            self._queue.append(Delivery(event, round_))
            self._ready.set()

    def catch_up(self) -> None:
        """Replay what may have been missed, after what is queued already."""
        if self._replaying:
            self._missed = True  # the running replay may have read the trail before the gap: read it again
            return
        self._replaying = True
        self._queue.append(_CATCH_UP)
        self._ready.set()

    # --- what the subscription reads -----------------------------------------------------------

    async def deliveries(self, session: LiveSession) -> AsyncIterator[Delivery]:
        """Events in the order to deliver them, each not seen before; the caller marks what it delivers."""
        if self.replay_first:
            self._replaying = True
            async for delivery in self._replay_until_caught_up(session, refuse_old=True):
                yield delivery
        while True:
            while not self._queue:
                self._ready.clear()
                await self._ready.wait()
            item = self._queue.popleft()
            if item is _CATCH_UP:
                async for delivery in self._replay_until_caught_up(session, refuse_old=False):
                    yield delivery
                continue
            assert isinstance(item, Delivery)
            self.connection.dequeue()
            if not self.position.seen(item.event.event_id):
                yield item

    async def one_shot(self, session: LiveSession, shot: OneShot) -> AsyncIterator[Delivery]:
        """The AWS fan-out's delivery (gateway.py): the one event, if this subscription takes it
        and has not seen it; with no event, the replay ``after`` asks for (none without it)."""
        if shot.event is None:
            if self.replay_first:
                async for delivery in self.replay(session, refuse_old=True):
                    yield delivery
            return
        if not self.position.seen(shot.event.event_id) and self.topic.matches(shot.event):
            yield Delivery(shot.event, shot.round)

    async def _replay_until_caught_up(self, session: LiveSession, *, refuse_old: bool) -> AsyncIterator[Delivery]:
        """Replay, and again while live events came meanwhile; then live events queue again.

        Nothing is awaited between the last read finding nothing new and ``_replaying`` ending,
        so no event falls between the trail and the queue."""
        try:
            while True:
                self._missed = False
                async for delivery in self.replay(session, refuse_old=refuse_old):
                    yield delivery
                if not self._missed or self.connection.closed is not None:
                    return
                refuse_old = False
        finally:
            self._replaying = False

    async def replay(self, session: LiveSession, *, refuse_old: bool) -> AsyncIterator[Delivery]:
        """The organisation's events after the position's floor, oldest first, filtered and unseen."""
        oldest = (time.time() - self.replay_seconds) * 1000
        if self.position.floor < oldest:
            if refuse_old:
                raise bad_input(
                    "after", "the cursor is too old to resume from: read the state again, subscribe without it"
                )
            self._behind()
            return
        org_id = self.connection.principal.org_id
        assert org_id is not None  # a live connection is a tenant's (websocket.py, over_http.py)
        table = session.services.datastore.table(TenantScope(org_id))
        after: str | None = self.position.replay_from()
        read = 0
        while after is not None:
            session.begin_event()
            events, after = await session.run(audit.events_after, table, after, limit=REPLAY_PAGE)
            read += len(events)
            if read > self.replay_events:
                if refuse_old:
                    raise bad_input(
                        "after", f"more than {self.replay_events} events since the cursor: read the state again"
                    )
                self._behind()
                return
            for event in events:
                if not self.position.seen(event.event_id) and self.topic.matches(event):
                    yield Delivery(event, None)

    def _behind(self) -> None:
        self.connection.close(Closed(Close.SLOW, "too far behind to catch up here: resume with your last cursor"))


def now_milliseconds() -> int:
    return int(time.time() * 1000)
