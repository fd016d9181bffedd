"""The process's live hub: the change feed in, each organisation's events out to its subscriptions.

One per process (built by graphql_api/app.py when the datastore has a stream client). It runs
the process's part of the change feed (datastore/feed/host.py: the lease, the reader while
this process holds it, and the connection to whichever process reads) and routes each frame
by the organisation in its header *before* decoding it: a record of an organisation with no
connection on this process is dropped as bytes, so another tenant's events are never decoded
for, let alone queued to, a subscriber.

- An audit event (every write has one, in its own transaction) is decoded once, and offered
  to each of the organisation's subscriptions whose topic matches it, with one round of
  loaders for all of them (session.py): what a subscriber gets is then decided per subscriber,
  at delivery, by the same permission code as queries (graphql_api/schema/subscription.py).
- A change to an employee (status, role), to an organisation (status), to an API key
  (revoked) or to a sign-in session (ended: signed out, a reused refresh token; or its
  person signed out everywhere) re-checks the connections it concerns at once: a terminated
  or re-roled employee, a suspended organisation, a revoked key, a session's end lose their
  connections with FORBIDDEN (4403), whether or not an event was on its way. Every delivery checks again anyway (an API
  key's own status included), so a revocation's audit event, which may come before the key's
  record, is never delivered to the revoked key.
- Each time this process's connection to the stream reader is made (a reader took over, or
  this process reconnected), every subscription catches up from the audit trail: what the
  reader handed on meanwhile reached no one here.

It also counts connections: per organisation and in all, each with its bound; and keeps
where each session's subscriptions got to, for a reconnect to resume from, here or on any
other process (resumes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from datastore.feed import records
from datastore.feed.fanout import GAP, Frame
from datastore.feed.host import FeedHost
from datastore.feed.lease import group_name, holder_name
from datastore.feed.records import ChangeName, StreamRecord, Undecodable
from datastore.kinds.entities import ApiKeyStatus, AuditEvent, EmployeeStatus, OrganizationStatus, SessionStatus
from datastore.tenancy.scope import FeedScope
from graphql_api.host.files import owner_tag, start_time, supervisor_pid
from graphql_api.subscriptions.closing import Close, Closed
from graphql_api.subscriptions.connection import LiveConnection
from graphql_api.subscriptions.expiry import signed_out_by
from graphql_api.subscriptions.live_metrics import Sampler
from graphql_api.subscriptions.resumes import Resumes
from graphql_api.subscriptions.session import event_round
from graphql_api.subscriptions.stream import LiveStream

if TYPE_CHECKING:
    from graphql_api.request.services import Services

log = logging.getLogger("hr.live")

AUDIT_EVENT: Final = "AuditEvent"
# Kinds whose changes may end connections (the caller's standing), and the events themselves.
SIGNED_OUT: Final = "SignedOut"
REVOKING: Final = frozenset({"Employee", "Organization", "ApiKey", "Session", SIGNED_OUT})
FEED_KINDS: Final = frozenset({AUDIT_EVENT, *REVOKING})


def instance_group() -> str:
    """This server instance's feed group: the host, and the process that started the workers
    (itself when it has no workers), by pid and start time."""
    owner = supervisor_pid() or os.getpid()
    return group_name(socket.gethostname(), owner_tag(owner) or owner)


def this_holder() -> str:
    pid = os.getpid()
    return holder_name(pid, start_time(pid))


class LiveHub:
    def __init__(self, services: Services, feed: FeedHost | None) -> None:
        self.services = services
        self.feed = feed
        self.streams: dict[str, set[LiveStream]] = defaultdict(set)
        self.connections: dict[str, set[LiveConnection]] = defaultdict(set)
        self.total = 0
        self.frames_dropped = 0
        self.events_decoded = 0
        self.resumes = Resumes(services)
        self._task: asyncio.Task[None] | None = None
        # Others fed every frame first, before the routing below (the webhook dispatcher's wake-ups).
        self.listeners: list[Callable[[Frame], None]] = []
        self._sampling: asyncio.Task[None] | None = None
        self._starting: asyncio.TimerHandle | None = None

    @classmethod
    def for_services(cls, services: Services) -> LiveHub:
        """The hub of a process whose datastore reads the change feed (``Datastore.feed``); without
        one, a hub that starts no reader and serves no subscription (it says so)."""
        datastore = services.datastore
        if datastore.feed is None:
            return cls(services, None)
        group = instance_group()
        settings = dataclasses.replace(datastore.feed, kinds=FEED_KINDS)
        table = datastore.table(FeedScope(group))
        # The clients are made when the feed first reads (Datastore's, each made once).
        feed = FeedHost(table, lambda: datastore.streams, lambda: datastore.client, group, this_holder(), settings)
        return cls(services, feed)

    @property
    def available(self) -> bool:
        return self.feed is not None

    # --- running -----------------------------------------------------------------------------------

    def start_soon(self, delay: float) -> None:
        """Start the feed ``delay`` seconds from now, or at the first live connection if sooner.

        A starting process answers its first requests without the feed's lease and stream
        calls competing for its CPU (they are on no request's path), and a subscriber never
        waits out the delay: the catch-up at the feed's connection (``on_connected``) hands it
        what was written before.
        """
        if self.feed is not None and self._task is None and self._starting is None:
            self._starting = asyncio.get_running_loop().call_later(delay, self.start)

    def start(self) -> None:
        if self._starting is not None:
            self._starting.cancel()
            self._starting = None
        if self.feed is not None and self._task is None:
            self._task = asyncio.create_task(self.feed.run(self.on_frame, self.on_connected))
            sampler = Sampler(self._open_connections, self._subscriptions, self.feed.status)
            self._sampling = asyncio.create_task(sampler.run())

    async def stop(self) -> None:
        if self._starting is not None:
            self._starting.cancel()
            self._starting = None
        for connections in list(self.connections.values()):
            for connection in list(connections):
                connection.close(Closed(Close.GOING_AWAY))
        for task in (self._task, self._sampling):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self._sampling = None

    # --- connections and subscriptions -----------------------------------------------------------

    def _open_connections(self) -> list[LiveConnection]:
        return [connection for connections in self.connections.values() for connection in connections]

    def _subscriptions(self) -> int:
        return sum(len(streams) for streams in self.streams.values())

    def admit(self, connection: LiveConnection) -> None:
        """Count a new connection; Closed(TOO_MANY) past a bound (nothing counted then)."""
        settings = self.services.settings
        org = connection.org_id
        if self.total >= settings.subscription_connections:
            raise Closed(Close.TOO_MANY, f"this server holds {settings.subscription_connections} live connections")
        if len(self.connections[org]) >= settings.subscription_connections_per_tenant:
            raise Closed(
                Close.TOO_MANY,
                f"your organisation has {settings.subscription_connections_per_tenant} live connections here",
            )
        self.connections[org].add(connection)
        self.total += 1
        self.start()  # the feed, now rather than at the end of start_soon's delay

    def release(self, connection: LiveConnection) -> None:
        org = connection.org_id
        if connection in self.connections.get(org, ()):
            self.connections[org].discard(connection)
            self.total -= 1
            if not self.connections[org]:
                del self.connections[org]

    def register(self, stream: LiveStream) -> None:
        self.streams[stream.org_id].add(stream)

    def unregister(self, stream: LiveStream) -> None:
        streams = self.streams.get(stream.org_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self.streams[stream.org_id]

    # --- the feed ----------------------------------------------------------------------------------

    def on_connected(self) -> None:
        for streams in self.streams.values():
            for stream in streams:
                stream.catch_up()

    def on_frame(self, frame: Frame) -> None:
        for listener in self.listeners:
            listener(frame)
        if frame.type == GAP:
            log.warning("live updates: the stream reader reports a gap (%s): catching up", frame.body.decode())
            self.on_connected()
            return
        org = frame.org_id
        if org is None or org not in self.connections:
            self.frames_dropped += 1  # not decoded: nobody here listens to that organisation
            return
        try:
            record = StreamRecord.decode(frame.body)
            if frame.kind == AUDIT_EVENT:
                if record.name is ChangeName.INSERT:
                    self._deliver(org, records.decode(record).new)
            elif frame.kind in REVOKING and (
                record.name is ChangeName.MODIFY or (frame.kind == SIGNED_OUT and record.name is ChangeName.INSERT)
            ):  # a sign-out everywhere's mark is put: its first is an INSERT
                self._revoke(org, records.decode(record))
        except Undecodable as error:
            log.error("live updates: a record of %s could not be read: %s", org, error)
        self.events_decoded += 1

    def _deliver(self, org: str, event: object) -> None:
        if not isinstance(event, AuditEvent):
            return
        matching = [stream for stream in self.streams.get(org, ()) if stream.topic.matches(event)]
        if not matching:
            return
        round_ = event_round(self.services, org)
        for stream in matching:
            stream.offer(event, round_)

    def _revoke(self, org: str, change: records.ChangeEvent) -> None:
        new = change.new
        why: str | None = None
        affected = list(self.connections.get(org, ()))
        if change.kind == "Organization":
            if getattr(new, "status", OrganizationStatus.ACTIVE) is not OrganizationStatus.ACTIVE:
                why = "the organisation is not active"
        elif change.kind == "Employee":
            old, emp_id = change.old, getattr(new, "emp_id", None)
            affected = [c for c in affected if not c.principal.api_key and c.principal.subject == emp_id]
            if getattr(new, "status", None) is not EmployeeStatus.ACTIVE:
                why = "the employee is not active"
            elif getattr(old, "role", None) is not getattr(new, "role", None):
                why = "the employee's role changed; sign in again"
        elif change.kind == "ApiKey":
            key_id = getattr(new, "key_id", None)
            affected = [c for c in affected if c.principal.api_key and c.principal.subject == key_id]
            if getattr(new, "status", None) is ApiKeyStatus.REVOKED:
                why = "the API key was revoked"
        elif change.kind == "Session":
            session_id = getattr(new, "session_id", None)
            affected = [c for c in affected if session_id is not None and c.principal.session_id == session_id]
            if getattr(new, "status", None) is not SessionStatus.ACTIVE:
                why = "the session ended: sign in again"
        elif change.kind == SIGNED_OUT:
            emp_id, at = getattr(new, "emp_id", None), getattr(new, "at", None)
            affected = [c for c in affected if signed_out_by(c.principal, emp_id, at)]
            why = "signed out everywhere: sign in again"
        if why is None:
            return
        for connection in affected:
            connection.close(Closed(Close.FORBIDDEN, why))
