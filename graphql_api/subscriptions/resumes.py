"""Where a signed-in session's subscriptions got to, so one re-sent after a reconnect goes on from there.

graphql-ws, Apollo's GraphQLWsLink and urql re-send a subscription's first payload whenever
they make the socket again (a connection's lifetime, 4413, a server stopping, a dropped
network), without ``after`` unless the app rewrites it: what was written in between (the
client's retry wait, a second or more) would be lost without a word. So the server keeps,
per session and subscription (its field and arguments: the cursor's topic), the cursor of
the last event the session was sent on it, or where it started. A subscription sent without
``after`` on another connection of the same session, for the same topic, while that cursor
is within SUBSCRIPTION_REPLAY_SECONDS, resumes from it as if sent with it
(graphql_api/schema/subscription.py), on whichever worker or host it reaches:

- this process remembers each cursor as its event is sent (bounded: the least recently used
  go first), the fast path: a reconnect to the same process while the old socket is still
  open here needs no read;
- when a connection ends, for any reason, each of its subscriptions' cursors is saved in the
  table (datastore/signin/resume_points.py, one PutItem each, for the replay window): where the
  server closes it (its lifetime, a slow consumer, a refused caller, the process stopping),
  before the close frame goes out, so the client's reconnect finds it; where the client
  closes it or the network drops, as soon as the server knows. A reconnect that finds no
  open socket of the session's here reads it (one GetItem) and goes on from the later of it
  and what this process remembers: another process may have sent the session more since.

A subscription its client completes is forgotten, here and in the table: the app is done
with it, and its next one starts from now. A session is the ``sid`` of a token from sign-in
(graphql_api/auth/signin.py); a caller without one (an API key, another issuer's token) is
not resumed. A save or a read that fails is logged, and the reconnect starts from now, as
before there was a table to ask: send ``after`` to be sure of that case too.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Final, ParamSpec, TypeVar

from datastore.kinds.bookkeeping import ResumePoint
from datastore.signin import resume_points
from datastore.table.scoped import Table
from datastore.tenancy.scope import TenantScope
from datastore.values import items
from datastore.values.ids import OrgId
from graphql_api.lru import Lru
from graphql_api.request.principal import Principal
from graphql_api.subscriptions.connection import LiveConnection

if TYPE_CHECKING:
    from graphql_api.request.services import Services

log = logging.getLogger("hr.live")

P = ParamSpec("P")
T = TypeVar("T")

# The longest a save or a read may hold a close frame or a subscription's start: past it the
# reconnect starts from now (a DynamoDB in trouble must not hold sockets open).
STORE_SECONDS: Final = 2.0


@dataclass(frozen=True, slots=True)
class ResumeKey:
    org_id: str
    subject: str
    session_id: str
    topic: str


@dataclass(slots=True)
class _Remembered:
    cursor: str
    connection: weakref.ref[LiveConnection]
    # The cursor last saved in the table (or being saved), so a connection's end saves it once.
    saved: str | None = None


class Resumes:
    def __init__(self, services: Services) -> None:
        self.services = services
        self._entries: Lru[ResumeKey, _Remembered] = Lru(services.settings.subscription_connections)
        # What the table was asked, for the operator (and tests): points saved, saves that
        # failed, and subscriptions resumed from a saved point.
        self.saved = 0
        self.save_failures = 0
        self.resumed_from_table = 0

    @staticmethod
    def key_for(principal: Principal, topic: str) -> ResumeKey | None:
        """The key of ``principal``'s subscription to ``topic``; None without a session."""
        if principal.session_id is None or principal.org_id is None or principal.api_key:
            return None
        return ResumeKey(principal.org_id, principal.subject, principal.session_id, topic)

    async def recall(self, key: ResumeKey, connection: LiveConnection) -> list[str]:
        """The cursors the session's subscription may resume from on ``connection``: none when
        this connection has it already; what this process remembers, and unless the socket it
        remembers is still open here, what the table holds (the caller takes the later)."""
        remembered = self._entries.get(key)
        if remembered is not None:
            holder = remembered.connection()
            if holder is connection:
                return []
            if holder is not None and holder.closed is None:
                return [remembered.cursor]  # still sending here: nothing newer was saved anywhere
        found = [] if remembered is None else [remembered.cursor]
        point = await self._stored(key)
        if point is not None:
            found.append(point.cursor)
        return found

    def remember(self, key: ResumeKey, cursor: str, connection: LiveConnection) -> None:
        self._entries.put(key, _Remembered(cursor, weakref.ref(connection)))

    def resumed_from(self, cursor: str, key: ResumeKey) -> None:
        """Count a resume from the table's point (``cursor`` was not this process's own)."""
        remembered = self._entries.get(key)
        if remembered is None or remembered.cursor != cursor:
            self.resumed_from_table += 1

    async def save(self, keys: list[ResumeKey], connection: LiveConnection) -> None:
        """Save where each of ``connection``'s subscriptions got to (its connection is ending)."""
        await asyncio.gather(*(self._save(key, connection) for key in keys))

    async def forget(self, key: ResumeKey) -> None:
        """The client is done with the subscription (or its resume was refused): the next starts from now."""
        self._entries.discard(key)
        try:
            await self._run(resume_points.forget, self._table(key), key.subject, key.session_id, self._name(key))
        except Exception as error:  # the point expires with its TTL anyway
            log.warning("live updates: the resume point of session %s was not deleted: %r", key.session_id, error)

    # --- the table -----------------------------------------------------------------------------

    async def _save(self, key: ResumeKey, connection: LiveConnection) -> None:
        remembered = self._entries.get(key)
        if remembered is None or remembered.connection() is not connection or remembered.saved == remembered.cursor:
            return
        cursor = remembered.saved = remembered.cursor
        now = items.now()
        window = timedelta(seconds=self.services.settings.subscription_replay_seconds)
        point = ResumePoint(OrgId(key.org_id), key.subject, key.session_id, self._name(key), cursor, now, now + window)
        try:
            await self._run(resume_points.save, self._table(key), point)
        except Exception as error:  # the reconnect starts from now: said, never raised into the close
            remembered.saved = None
            self.save_failures += 1
            log.warning("live updates: the resume point of session %s was not saved: %r", key.session_id, error)
            return
        self.saved += 1

    async def _stored(self, key: ResumeKey) -> ResumePoint | None:
        try:
            return await self._run(
                resume_points.find, self._table(key), key.subject, key.session_id, self._name(key), items.now()
            )
        except Exception as error:
            log.warning("live updates: the resume point of session %s was not read: %r", key.session_id, error)
            return None

    async def _run(self, fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn`` awaited, bounded in time: cancelled (and what it sends with it) past STORE_SECONDS."""
        return await asyncio.wait_for(fn(*args, **kwargs), STORE_SECONDS)

    def _table(self, key: ResumeKey) -> Table:
        return self.services.datastore.table(TenantScope(OrgId(key.org_id), key.subject))

    @staticmethod
    def _name(key: ResumeKey) -> str:
        return resume_points.subscription_hash(key.topic)
