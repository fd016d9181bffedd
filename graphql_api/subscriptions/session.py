"""One subscription's session: a request session renewed for each event it delivers.

A subscription lives for hours, so the one-request session (graphql_api/request/session.py)
is renewed per event: each delivery starts with a fresh deadline (REQUEST_TIMEOUT_SECONDS),
call budget and call log, and reads through the loaders of that event's *round*: the
subscribers of one organisation on one process share one round per event (hub.py), so the
item the event names, the caller's organisation and each caller's employee are read once,
in one batch, for all of them. What a round's loaders cache lives as long as the round: the
next event reads everything again. Every permission rule still runs for each subscriber with
their own principal; only the reads are shared, and only within one organisation.

A replayed event (``after``, a catch-up) is read through loaders of the subscription's own,
fresh for each page of the replay.

Each delivery's calls are recorded in the log its ``extensions.cost`` reads
(COST_IN_RESPONSE): a live event's, in its round's log, which every subscriber of the round
shows (the reads its payload was built from, made once for all of them); a replayed event's,
in the subscription's own.

On AWS (gateway.py) no process holds a subscription open: each of a subscription's events is
one execution of its stored document, through the same field and the same rules, with the
session's ``one_shot``: the one event to deliver (or none: the subscription is being checked
when it is made, and replays what ``after`` missed), instead of the process's hub.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from datastore.aws import calls
from datastore.aws.calls import CallLog
from datastore.kinds.entities import AuditEvent
from datastore.tenancy.scope import TenantScope
from datastore.values.ids import OrgId
from graphql_api.execution.loaders import Loaders
from graphql_api.request.services import Services
from graphql_api.request.session import Deadline, RequestSession
from graphql_api.subscriptions.connection import LiveConnection
from graphql_api.subscriptions.resumes import ResumeKey


@dataclass(frozen=True, slots=True)
class Round:
    """One event's reads for the organisation's subscribers on this process: the loaders they
    share, and the log of the calls those loaders make."""

    loaders: Loaders
    call_log: CallLog


def event_round(services: Services, org_id: str) -> Round:
    """The round of one event, on a session of its own (its deadline, its budget, its log).

    Its loaders' reads are awaited on the event loop through the datastore's Table, on the
    loop's one client (the app's lifespan closes its connections), like a request's loaders."""
    session = RequestSession(services, None, Deadline.after(services.settings.request_timeout_seconds))
    table = services.datastore.table(TenantScope(OrgId(org_id)), deadline=session.deadline.at)
    return Round(Loaders(table, session.admit_call), session.call_log)


@dataclass(slots=True)
class ShotPlace:
    """Where a one-shot execution got to, for the AWS path's resumes (gateway.py): its topic and
    the cursor of its start or of the event it delivered (set by the subscription's field);
    ``stored`` finds a session's saved cursor for a topic, for a start without ``after``."""

    stored: Callable[[str], Awaitable[str | None]] | None = None
    topic: str | None = None
    cursor: str | None = None
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class OneShot:
    """One execution of a subscription, without the hub (the AWS fan-out, gateway.py): deliver
    ``event`` if the subscription takes it and end; with no event, start the subscription (its
    checks), replay what its ``after`` missed, and end."""

    event: AuditEvent | None = None
    # The event's round: the loaders the organisation's subscribers of this event share.
    round: Round | None = None
    place: ShotPlace = field(default_factory=ShotPlace)


@dataclass
class LiveSession(RequestSession):
    connection: LiveConnection | None = None
    one_shot: OneShot | None = None
    # Where the hub remembers this subscription's place for a reconnect (resumes.py), if it does.
    resume_key: ResumeKey | None = None
    _round: Loaders | None = None

    def begin_event(self, round_: Round | None = None) -> None:
        """The next event's delivery starts: read by ``round_``'s loaders, its calls in the
        round's log; None: by fresh loaders of its own, into a log of its own."""
        self.deadline = Deadline.after(self.services.settings.request_timeout_seconds)
        self.call_log = CallLog() if round_ is None else round_.call_log
        # The subscription's task: the batches its loads dispatch copy this context, and its
        # other calls are awaited in it, so their calls are recorded in the delivery's log.
        calls.current_log.set(self.call_log)
        calls.current_depth.set(0)
        self.started = time.perf_counter()
        self.cancelled = False
        self._budget = None
        self._response_budget = None
        self._loaders = None
        # The next delivery's Table is made under its own deadline (none retried past it).
        self._tenant_table = None
        self._round = None if round_ is None else round_.loaders

    @property
    def loaders(self) -> Loaders:
        if self._round is not None:
            return self._round
        return super().loaders

    def end(self) -> None:
        self._round = None
        super().end()
