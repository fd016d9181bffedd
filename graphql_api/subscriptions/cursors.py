"""A subscription's place in its organisation's audit trail, and the cursor that carries it.

Every event delivered carries a cursor; subscribing with ``after: <cursor>`` replays the
events since, from the audit trail (graphql_api/subscriptions/stream.py). An event is named
by its audit event id, a ULID minted from the write's time just before the write commits.
Writes commit in the order DynamoDB applies them, which is not quite id order: a write
minted at t may commit after one minted at t + 1 ms (two writers racing, a retried
transaction). So a position is not "the last id": it is a time ``floor`` (milliseconds) and
the ids delivered after it (``recent``). Every event at or before the floor was delivered or
never will be; the floor trails the newest delivered event by the reorder window
(SUBSCRIPTION_REORDER_WINDOW_SECONDS), the longest a write's id may precede its commit. A
replay from a position returns the events after the floor that are not in ``recent``:
exactly the missed ones, late commits included, none twice.

The cursor is the position signed, and bound to the organisation and to the subscription
it came from (field and argument), like list cursors (graphql_api/request/cursors.py). It
names at most CURSOR_IDS recent ids, the newest: past that (more than CURSOR_IDS events
within one window) its floor stays where it is and a resume may repeat the oldest of them,
never miss one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from datastore.values import ids
from graphql_api.execution.errors import bad_input
from graphql_api.request.cursors import CursorCodec

CURSOR_IDS: Final = 64


@dataclass
class Position:
    floor: int
    window_ms: int
    recent: dict[str, int] = field(default_factory=dict)

    @classmethod
    def starting_at(cls, milliseconds: int, window_ms: int) -> Position:
        """A subscription from now on: events minted after ``milliseconds``."""
        return cls(milliseconds, window_ms)

    def seen(self, event_id: str) -> bool:
        """Delivered already, or at or before the floor (delivered or never to be)."""
        return event_id in self.recent or ids.id_milliseconds(event_id) <= self.floor

    def delivered(self, event_id: str) -> None:
        self.recent[event_id] = ids.id_milliseconds(event_id)
        newest = max(self.recent.values())
        self.floor = max(self.floor, newest - self.window_ms)
        self.recent = {known: at for known, at in self.recent.items() if at > self.floor}

    def reached(self) -> int:
        """How far it got: the time of the newest event it delivered, else its floor."""
        return max([self.floor, *self.recent.values()])

    def replay_from(self) -> str:
        """The bound a replay reads after: the greatest id of the floor's millisecond."""
        return ids.id_ceiling(self.floor)


class Cursors:
    """Signs positions into cursors bound to one organisation and one subscription, and back."""

    def __init__(self, codec: CursorCodec, window_ms: int) -> None:
        self.codec = codec
        self.window_ms = window_ms

    def encode(self, org_id: str, topic: str, position: Position) -> str:
        newest = sorted(position.recent.items(), key=lambda pair: (pair[1], pair[0]))[-CURSOR_IDS:]
        return self.codec.encode(org_id, topic, {"w": str(position.floor), "d": " ".join(i for i, _at in newest)})

    def decode(self, cursor: str, org_id: str, topic: str) -> Position:
        """The position ``cursor`` carries; BAD_USER_INPUT on ``after`` for any other cursor."""
        invalid = bad_input("after", "is not a cursor of this subscription")
        state = self.codec.decode(cursor, org_id, topic)  # BAD_USER_INPUT when forged or another's
        floor, recent = state.get("w", ""), state.get("d", "").split()
        if not floor.isdigit() or len(recent) > CURSOR_IDS:
            raise invalid
        parsed = [ids.parse(str, event_id) for event_id in recent]
        if any(event_id is None for event_id in parsed):
            raise invalid
        position = Position(int(floor), self.window_ms)
        position.recent = {event_id: ids.id_milliseconds(event_id) for event_id in recent}
        return position
