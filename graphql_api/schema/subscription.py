"""The root Subscription type: live updates of the caller's organisation.

Each field is an async generator over its topic's events (graphql_api/schema/live_topics.py)
as the process's hub hands them in, after a replay from the audit trail when ``after`` is
given (graphql_api/subscriptions/stream.py). For every event, at delivery: the caller's
active check (graphql_api/auth/active.py, as for every request: a suspended organisation, a
terminated employee or a changed role end the connection with FORBIDDEN), then the topic's
own rules, then the selection is executed with the types' field rules, exactly as a query's.
Served over WebSocket (graphql-transport-ws) and HTTP streams (Server-Sent Events, multipart:
graphql_api/subscriptions/over_http.py); a plain JSON request gets
SUBSCRIPTIONS_NOT_SUPPORTED (graphql_api/subscriptions/edge.py). On AWS (API Gateway's
WebSocket API, graphql_api/subscriptions/gateway.py) each event is one execution of the
stored subscription through the same field (the session's ``one_shot``), so the same checks run.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import strawberry

from datastore.values import ids
from graphql_api.auth.active import check_active
from graphql_api.execution.errors import ApiError, Code
from graphql_api.request.context import RequestContext
from graphql_api.schema import live_topics, permissions
from graphql_api.schema.types.live import ApplicationChange, AuditEventAdded, EmployeeChange, JobPostingChange
from graphql_api.subscriptions import live_metrics
from graphql_api.subscriptions.closing import Close, Closed
from graphql_api.subscriptions.connection import LiveConnection
from graphql_api.subscriptions.context import LiveContext
from graphql_api.subscriptions.cursors import Cursors, Position
from graphql_api.subscriptions.session import LiveSession
from graphql_api.subscriptions.stream import LiveStream

Info = strawberry.Info[RequestContext, None]

LiveAfter = Annotated[
    str | None,
    strawberry.argument(
        description="A `cursor` this subscription delivered: first replay every event since (from the audit "
        "trail), then go on live, with no gap and no event twice. A cursor of another subscription, "
        "organisation or argument is BAD_USER_INPUT, and so is one too far behind to replay (read the state "
        "again and subscribe without it)."
    ),
]


async def _deliver(info: Info, topic: live_topics.LiveTopic, after: str | None) -> AsyncGenerator[Any, None]:
    context = info.context
    session = context.session
    services = session.services
    # The hub of a subscription held open on this process; on AWS none (the event is given).
    hub = context.hub if isinstance(context, LiveContext) else None
    shot = session.one_shot if isinstance(session, LiveSession) else None
    held = isinstance(session, LiveSession) and session.connection is not None and hub is not None and hub.available
    if shot is None and not held:
        raise ApiError(Code.UNAVAILABLE, "live updates are not served by this process", retryable=False)
    assert isinstance(session, LiveSession)
    principal = permissions.caller(context)
    assert principal.org_id is not None
    if shot is not None and shot.round is not None:
        # On AWS the start's reads are the event's too: from the round the subscribers share.
        session.begin_event(shot.round)
    await topic.start(context)
    settings = services.settings
    window = int(settings.subscription_reorder_window_seconds * 1000)
    cursors = Cursors(services.cursors, window)
    # From now on; on AWS, from just before the one event being delivered (it was minted earlier).
    start = int(time.time() * 1000)
    if shot is not None and shot.event is not None:
        start = ids.id_milliseconds(shot.event.event_id) - 1
    connection = session.connection
    key = None
    if shot is None and hub is not None and connection is not None:
        key = hub.resumes.key_for(principal, topic.name)
    position = (
        Position.starting_at(start, window) if after is None else cursors.decode(after, principal.org_id, topic.name)
    )
    resumed = False
    if key is not None and after is None:
        # Sent again without ``after`` on a new connection of the same session (a client's
        # reconnect): from where it got to, when a resume may replay that far back.
        # From the later of this process's memory and the point a connection's end saved in
        # the table (any process's: resumes.py).
        assert hub is not None and connection is not None
        known: Position | None = None
        chosen = ""
        for remembered in await hub.resumes.recall(key, connection):
            try:
                candidate = cursors.decode(remembered, principal.org_id, topic.name)
            except ApiError:
                continue  # signed with a key this server no longer has: start from now
            if known is None or candidate.reached() > known.reached():
                known, chosen = candidate, remembered
        if known is not None and known.floor >= start - settings.subscription_replay_seconds * 1000:
            position, resumed = known, True
            hub.resumes.resumed_from(chosen, key)
    place = None if shot is None else shot.place
    if place is not None and place.stored is not None and after is None and shot is not None and shot.event is None:
        # On AWS, a session's subscription started again without ``after``: from the point its
        # last connection's end saved (gateway.py), within the replay window, as above.
        stored = await place.stored(topic.name)
        if stored is not None:
            saved: Position | None
            try:
                saved = cursors.decode(stored, principal.org_id, topic.name)
            except ApiError:
                saved = None  # signed with a key this server no longer has: start from now
            if saved is not None and saved.floor >= start - settings.subscription_replay_seconds * 1000:
                position, resumed = saved, True
                place.resumed = True
    stream = LiveStream(
        connection or LiveConnection(principal, 0, _closes_nothing),
        topic,
        position,
        settings.subscription_replay_events,
        settings.subscription_replay_seconds,
        replay_first=after is not None or resumed,
    )
    if key is not None:
        assert hub is not None and connection is not None
        session.resume_key = key
        hub.resumes.remember(key, cursors.encode(principal.org_id, topic.name, position), connection)
    if place is not None:
        place.topic, place.cursor = topic.name, cursors.encode(principal.org_id, topic.name, position)
    if shot is not None:
        deliveries = stream.one_shot(session, shot)
    else:
        assert hub is not None
        # Registered before the replay reads the trail: what commits after that read is on its way.
        hub.register(stream)
        deliveries = stream.deliveries(session)
    delivered = False
    try:
        async for delivery in deliveries:
            session.begin_event(delivery.round)
            try:
                await check_active(context, key_status=True)  # an API key's status too: it may be revoked
            except ApiError as refused:
                if connection is None:
                    raise  # on AWS the fan-out ends the connection (graphql_api/subscriptions/gateway.py)
                connection.close(Closed(Close.FORBIDDEN, str(refused)))
                return
            payload = await topic.payload(context, delivery.event)
            if payload is None:
                continue
            stream.position.delivered(delivery.event.event_id)
            payload.cursor = cursor = cursors.encode(principal.org_id, topic.name, stream.position)
            delivered = True
            if place is not None:
                place.cursor = cursor
            live_metrics.delivered()
            yield payload
            # Resumed here once the transport has sent it (it asks for the next only then).
            if key is not None and connection is not None and hub is not None:
                hub.resumes.remember(key, cursor, connection)
    except ApiError:
        if resumed and not delivered and key is not None and hub is not None:
            # A resume its replay refused (too many events since): the next one starts from now.
            await hub.resumes.forget(key)
        raise
    finally:
        if shot is None and hub is not None:
            hub.unregister(stream)


async def _closes_nothing(_why: Closed) -> None:
    """A one-shot execution's stand-in connection: it holds no socket (gateway.py closes those)."""


@strawberry.type(
    description="Live updates of your organisation, over WebSocket at /graphql (graphql-transport-ws) or HTTP "
    "(`Accept: text/event-stream`, `multipart/mixed` or `multipart/mixed;subscriptionSpec=1.0`). "
    "Each event is checked when it is delivered, with the rules of queries: you get what you could read at "
    "that moment. Every field needs an employee's token or an API key."
)
class Subscription:
    @strawberry.subscription(
        description="The job board: postings created, updated, published and closed. Employees get OPEN "
        "postings, and a posting leaving the board (`jobPosting` null); managers and admins get every posting."
    )
    async def job_posting_changed(self, info: Info, after: LiveAfter = None) -> AsyncGenerator[JobPostingChange, None]:
        async for event in _deliver(info, live_topics.JobBoard(), after):
            yield event

    @strawberry.subscription(
        description="Applications to one job posting: made, withdrawn, moved to another status. For those who "
        "may read the job's applications (admins, the manager of its department); anyone else gets FORBIDDEN, "
        "when subscribing or as soon as they no longer may."
    )
    async def application_changed(
        self,
        info: Info,
        job_posting_id: Annotated[
            strawberry.ID, strawberry.argument(description="The job posting's global id (`JobPosting.id`).")
        ],
        after: LiveAfter = None,
    ) -> AsyncGenerator[ApplicationChange, None]:
        topic = live_topics.ApplicationsOfJob(live_topics.job_of(job_posting_id))
        async for event in _deliver(info, topic, after):
            yield event

    @strawberry.subscription(
        description="Your own applications, as their status changes. Employees' tokens only (an API key is no "
        "applicant: FORBIDDEN)."
    )
    async def my_application_changed(
        self, info: Info, after: LiveAfter = None
    ) -> AsyncGenerator[ApplicationChange, None]:
        window = int(info.context.session.services.settings.subscription_reorder_window_seconds * 1000)
        topic = live_topics.MyApplications(permissions.person(info.context), window)
        async for event in _deliver(info, topic, after):
            yield event

    @strawberry.subscription(
        description="The directory: employees created, changed, moved and terminated, with the field rules of queries."
    )
    async def employee_changed(self, info: Info, after: LiveAfter = None) -> AsyncGenerator[EmployeeChange, None]:
        async for event in _deliver(info, live_topics.Directory(), after):
            yield event

    @strawberry.subscription(
        description="Every write, as `organization.auditLog` lists it. Admins only: anyone else gets FORBIDDEN."
    )
    async def audit_event_added(self, info: Info, after: LiveAfter = None) -> AsyncGenerator[AuditEventAdded, None]:
        async for event in _deliver(info, live_topics.AuditTrail(), after):
            yield event
