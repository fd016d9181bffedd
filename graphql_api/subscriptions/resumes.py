"""Where a signed-in session's subscriptions got to, so one re-sent after a reconnect goes on from there.

graphql-ws, Apollo's GraphQLWsLink and urql re-send a subscription's first payload whenever
they make the socket again (a connection's lifetime, 4413, a server stopping, a dropped
network), without ``after`` unless the app rewrites it: what was written in between (the
client's retry wait, a second or more) would be lost without a word. So this process
remembers, per session and subscription (its field and arguments: the cursor's topic), the
cursor of the last event the session was sent on it, or where it started. A subscription
sent without ``after`` on another connection of the same session, for the same topic, while
that cursor is within SUBSCRIPTION_REPLAY_SECONDS, resumes from it as if sent with it
(graphql_api/schema/subscription.py). A subscription its client completes is forgotten: the
app is done with it, and its next one starts from now.

A session is the ``sid`` of a token from sign-in (graphql_api/auth/signin.py); a caller
without one (an API key, another issuer's token) is not resumed. This is the process's
memory, bounded (the least recently used go first): a reconnect that reaches another worker
or host starts from now unless the app sends ``after``.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from graphql_api.auth.tokens import Principal
from graphql_api.lru import Lru
from graphql_api.subscriptions.connection import LiveConnection


@dataclass(frozen=True, slots=True)
class ResumeKey:
    org_id: str
    subject: str
    session_id: str
    topic: str


@dataclass(frozen=True, slots=True)
class _Remembered:
    cursor: str
    connection: weakref.ref[LiveConnection]


class Resumes:
    def __init__(self, max_entries: int) -> None:
        self._entries: Lru[ResumeKey, _Remembered] = Lru(max_entries)

    @staticmethod
    def key_for(principal: Principal, topic: str) -> ResumeKey | None:
        """The key of ``principal``'s subscription to ``topic``; None without a session."""
        if principal.session_id is None or principal.org_id is None or principal.api_key:
            return None
        return ResumeKey(principal.org_id, principal.subject, principal.session_id, topic)

    def recall(self, key: ResumeKey, connection: LiveConnection) -> str | None:
        """The cursor to resume from, if the session had this subscription on another connection."""
        remembered = self._entries.get(key)
        if remembered is None or remembered.connection() is connection:
            return None
        return remembered.cursor

    def remember(self, key: ResumeKey, cursor: str, connection: LiveConnection) -> None:
        self._entries.put(key, _Remembered(cursor, weakref.ref(connection)))

    def forget(self, key: ResumeKey) -> None:
        self._entries.discard(key)
