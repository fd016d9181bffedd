"""Live updates on AWS: graphql-transport-ws over API Gateway's WebSocket API, and the stream's fan-out.

API Gateway holds the sockets and calls a Lambda function for each of a connection's events:
``$connect`` (the handshake), ``$default`` (every message the client sends) and
``$disconnect``. Nothing survives between invocations, so a connection and its subscriptions
are items (datastore/tenants/live_connections.py), and the server speaks to a client only through API
Gateway's management API (``PostToConnection``, ``DeleteConnection``). A second function,
triggered by the table's stream, fans each organisation's events out to its subscribers.

The protocol (graphql-ws's PROTOCOL.md), as ``LiveGateway.connection`` answers it:

- ``$connect`` authenticates when the handshake carries ``Authorization`` (not a browser's):
  a refused credential refuses the handshake (HTTP 401/403, the client sees the WebSocket fail
  to open); without one the connection opens and waits for ``connection_init``.
- ``connection_init`` authenticates from its payload's ``Authorization`` through the same
  backend as HTTP (graphql_api/auth/backend.py), then the caller's active check, records the
  connection and answers ``connection_ack``. A second ``connection_init`` is 4429.
- ``ping`` gets ``pong``; ``subscribe`` is checked by running the subscription once, exactly as
  the fan-out will (its document, its caller's rights, ``after``'s cursor), recorded, and any
  events its ``after`` missed are replayed (at least once: an event of the seam may come twice);
  a refusal is the protocol's ``error``. ``complete`` deletes the subscription.
- ``$disconnect`` deletes the connection's items, first saving where a sign-in session's
  subscriptions got to (resume points, as resumes.py's): the session's next connection
  resumes a subscription re-sent without ``after`` from there.

API Gateway cannot send a close code: it closes a socket when told to (DeleteConnection) with
a code of its own. So a refusal is told first, as a protocol message every client accepts:
a ``ping`` whose payload is ``{"close": {"code": 4403, "reason": "..."}}`` (the code of
closing.py; graphql-ws hands a ping's payload to ``on.ping``), then the connection is deleted.

The fan-out (``LiveGateway.stream``) takes a batch of stream records, groups them by the
organisation of their partition key, and, for an organisation with audit events or changes to
a caller's standing, reads its live partition (one Query) and no other's: another tenant's
records are never decoded for a subscriber. Each audit event is offered to each subscription
whose root field listens to its kind: the caller's active check (graphql_api/auth/active.py),
then one execution of the stored document with the event (``OneShot``): the same field, the
same topic rules and field rules as every query (graphql_api/schema/subscription.py), through
one round of loaders shared by the organisation's subscribers. A caller no longer active
(terminated, suspended, role changed, token expired with no signed-in session, an API key
revoked, a session ended or signed out everywhere: its record is read
with the organisation's, so a key whose revocation's records come in another batch is refused
before its own revocation's event) is closed 4403 and their items deleted;
a connection API Gateway says is gone (410) has its items deleted. A DynamoDB failure fails
the batch, which Lambda retries (at least once).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import urllib.parse
import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

import orjson
import strawberry
from graphql import GraphQLError, OperationDefinitionNode, parse
from starlette.authentication import AuthenticationError
from starlette.requests import HTTPConnection
from starlette.responses import Response
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType
from strawberry.utils.aio import aclosing

from datastore.errors import DatastoreError
from datastore.feed import records
from datastore.feed.records import ChangeName, StreamRecord
from datastore.kinds.bookkeeping import GatewayConnection, GatewaySubscription, ResumePoint
from datastore.kinds.entities import ApiKeyStatus, AuditEvent, EmployeeStatus, OrganizationStatus, Role, SessionStatus
from datastore.signin import resume_points
from datastore.tenancy.scope import GatewayScope, TenantScope
from datastore.tenants import live_connections
from datastore.values.ids import OrgId
from datastore.values.items import now
from graphql_api.auth.active import check_active
from graphql_api.auth.backend import BearerTokenBackend, CredentialUnavailable
from graphql_api.execution.errors import ApiError
from graphql_api.http.errors import TransportError, bad_request
from graphql_api.http.persisted import PersistedDocuments
from graphql_api.http.request import operation_of
from graphql_api.http.response import payload
from graphql_api.request.context import RequestContext
from graphql_api.request.principal import Principal
from graphql_api.request.services import Services
from graphql_api.request.session import Deadline
from graphql_api.subscriptions.admission import admit
from graphql_api.subscriptions.closing import Close, Closed
from graphql_api.subscriptions.expiry import signed_in_until, signed_out_by
from graphql_api.subscriptions.messages import check_size, operation_id_of
from graphql_api.subscriptions.session import LiveSession, OneShot, ShotPlace, event_round

log = logging.getLogger("hr.live")

PROTOCOL: Final = "graphql-transport-ws"
# API Gateway ends every WebSocket connection after two hours.
CONNECTION_LIFETIME: Final = timedelta(hours=2)
AUDIT_EVENT: Final = "AuditEvent"
SIGNED_OUT: Final = "SignedOut"
REVOKING: Final = frozenset({"Employee", "Organization", "ApiKey", "Session", SIGNED_OUT})
# The audit events each root field listens to (its topic's ``matches`` decides exactly).
FIELD_KINDS: Final[Mapping[str, frozenset[str] | None]] = {
    "jobPostingChanged": frozenset({"JobPosting"}),
    "applicationChanged": frozenset({"Application"}),
    "myApplicationChanged": frozenset({"Application"}),
    "employeeChanged": frozenset({"Employee"}),
    "auditEventAdded": None,  # every write
}
TOO_MANY_SUBSCRIPTIONS: Final = "TOO_MANY_SUBSCRIPTIONS"
_REGION: Final = re.compile(r"[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com")


class ManagementApi(Protocol):
    """API Gateway's management API for one stage (``endpoint``: ``https://<domain>/<stage>``)."""

    def post(self, endpoint: str, connection_id: str, data: bytes) -> bool:
        """Send one text frame; False when the connection is gone (410)."""
        ...

    def delete(self, endpoint: str, connection_id: str) -> None:
        """Close the connection (nothing when it is gone already)."""
        ...


class Boto3ManagementApi:
    """The management API through boto3, one client per stage endpoint, made on first use, in the
    endpoint's own region (``<api>.execute-api.<region>.amazonaws.com``)."""

    def __init__(self, endpoint_of: Mapping[str, str] | None = None, **client_options: Any) -> None:
        # ``endpoint_of``: where to send what is meant for an endpoint (tests: a local server).
        self.endpoint_of = dict(endpoint_of or {})
        self.client_options = client_options
        self._clients: dict[str, Any] = {}

    def _client(self, endpoint: str) -> Any:
        client = self._clients.get(endpoint)
        if client is None:
            # Imported with the first client, when a first message goes out: not at the function's start.
            import boto3

            url = self.endpoint_of.get(endpoint, endpoint)
            host = urllib.parse.urlsplit(endpoint).hostname or ""
            region = _REGION.fullmatch(host)
            options = dict(self.client_options)
            if region is not None:
                options.setdefault("region_name", region.group(1))
            client = self._clients[endpoint] = boto3.client("apigatewaymanagementapi", endpoint_url=url, **options)
        return client

    def post(self, endpoint: str, connection_id: str, data: bytes) -> bool:
        client = self._client(endpoint)
        try:
            client.post_to_connection(ConnectionId=connection_id, Data=data)
        except client.exceptions.GoneException:
            return False
        return True

    def delete(self, endpoint: str, connection_id: str) -> None:
        client = self._client(endpoint)
        with contextlib.suppress(client.exceptions.GoneException):
            client.delete_connection(ConnectionId=connection_id)


@dataclass(frozen=True, slots=True)
class SocketEvent:
    """What an API Gateway WebSocket event says: its route, connection, stage and message."""

    route: str
    connection_id: str
    endpoint: str
    body: str | None
    headers: Mapping[str, str]

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> SocketEvent:
        context = event["requestContext"]
        headers = {str(name).lower(): str(value) for name, value in (event.get("headers") or {}).items()}
        return cls(
            route=str(context["routeKey"]),
            connection_id=str(context["connectionId"]),
            endpoint=f"https://{context['domainName']}/{context['stage']}",
            body=event.get("body"),
            headers=headers,
        )


def closing_ping(closed: Closed) -> bytes:
    """The message that tells a client why API Gateway is about to close it (no close codes there)."""
    return orjson.dumps({"type": "ping", "payload": {"close": {"code": closed.close.code, "reason": closed.reason()}}})


def _message(**fields: Any) -> bytes:
    return orjson.dumps(fields)


def principal_of(connection: GatewayConnection) -> Principal:
    expires = connection.token_expires_at
    return Principal(
        subject=connection.subject,
        org_id=connection.org_id,
        role=None if connection.role is None else Role(connection.role),
        api_key=connection.api_key,
        session_id=connection.session_id,  # type: ignore[arg-type]
        expires_at=None if expires is None else expires.timestamp(),
    )


def _over(connection: GatewayConnection, moment: datetime) -> Closed | None:
    """Why a recorded connection is over at ``moment``, if it is: its token expired (4403; a
    token from sign-in is then checked against its session, ``LiveGateway._standing``), or it
    reached API Gateway's two hours (4408: API Gateway has closed it by then; its items go)."""
    if connection.token_expires_at is not None and connection.token_expires_at <= moment:
        return Closed(Close.FORBIDDEN, "the token expired: reconnect with a fresh one")
    if connection.connected_at + CONNECTION_LIFETIME <= moment:
        return Closed(Close.TIMED_OUT, "the connection reached its two-hour lifetime: reconnect")
    return None


def root_field(document: str, operation_name: str | None) -> str | None:
    """The subscription's root field (not its alias); None for a document that does not parse
    or names no such operation (its execution says why)."""
    try:
        parsed = parse(document)
    except GraphQLError:
        return None
    operations = [d for d in parsed.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [o for o in operations if operation_name is None or (o.name and o.name.value == operation_name)]
    if len(chosen) != 1 or not chosen[0].selection_set.selections:
        return None
    first = chosen[0].selection_set.selections[0]
    name = getattr(first, "name", None)
    return None if name is None else str(name.value)


class LiveGateway:
    def __init__(
        self,
        schema: strawberry.Schema,
        services: Services,
        backend: BearerTokenBackend,
        persisted: PersistedDocuments,
        management: ManagementApi,
    ) -> None:
        self.schema = schema
        self.services = services
        self.backend = backend
        self.persisted = persisted
        self.management = management

    # --- the management API, off the loop -----------------------------------------------------

    async def _post(self, endpoint: str, connection_id: str, data: bytes) -> bool:
        return await self.services.run_blocking(self.management.post, endpoint, connection_id, data)

    async def _close(self, endpoint: str, connection_id: str, closed: Closed, org_id: str | None) -> None:
        """Tell the client why, close its socket, and delete its items."""
        log.info("live connection %s closed: %s %s", connection_id, closed.close.code, closed.detail)
        await self._post(endpoint, connection_id, closing_ping(closed))
        await self.services.run_blocking(self.management.delete, endpoint, connection_id)
        if org_id is not None:
            await self._end(org_id, connection_id)

    async def _end(self, org_id: str, connection_id: str) -> None:
        """Delete a connection's items, first saving where each of a sign-in session's
        subscriptions got to, for the session's next connection to resume from (resumes.py's
        points, one PutItem each: ``_resumable``)."""
        table = self._tenant(org_id)
        limit = live_connections.LIVE_ITEMS_MAX
        connection = await live_connections.get_connection(table, connection_id)
        subscriptions = await live_connections.subscriptions_of(table, connection_id, limit=limit)
        if connection is not None and connection.session_id is not None and not connection.api_key:
            window = timedelta(seconds=self.services.settings.subscription_replay_seconds)
            at = now()
            for subscription in subscriptions:
                if subscription.topic is None or subscription.cursor is None:
                    continue  # recorded before cursors were kept, or not yet started
                point = ResumePoint(
                    connection.org_id,
                    connection.subject,
                    connection.session_id,
                    resume_points.subscription_hash(subscription.topic),
                    subscription.cursor,
                    at,
                    at + window,
                )
                try:
                    await resume_points.save(self._points(connection), point)
                except DatastoreError as error:  # the reconnect starts from now: said, never raised into the close
                    log.warning("live connection %s: a resume point was not saved: %r", connection_id, error)
        await live_connections.close_connection(table, connection_id, subscriptions)

    def _points(self, connection: GatewayConnection) -> Any:
        """Where the session's resume points are (beside its sessions: the person's scope)."""
        return self.services.datastore.table(TenantScope(OrgId(connection.org_id), connection.subject))

    def _resumable(self, connection: GatewayConnection) -> ShotPlace:
        """A start's place: for a sign-in session's connection, with the saved cursor to resume from."""
        if connection.session_id is None or connection.api_key:
            return ShotPlace()
        session_id = connection.session_id

        async def stored(topic: str) -> str | None:
            name = resume_points.subscription_hash(topic)
            table = self._points(connection)
            try:
                point = await resume_points.find(table, connection.subject, session_id, name, now())
            except DatastoreError as error:  # start from now, as a reconnect on one host would
                log.warning("live connection %s: the resume point was not read: %r", connection.connection_id, error)
                return None
            return None if point is None else point.cursor

        return ShotPlace(stored=stored)

    def _tenant(self, org_id: str) -> Any:
        return self.services.datastore.table(TenantScope(OrgId(org_id)))

    def _context(self, principal: Principal, shot: OneShot | None) -> RequestContext:
        timeout = self.services.settings.request_timeout_seconds
        session = LiveSession(self.services, principal, Deadline.after(timeout), one_shot=shot)
        scope = {"type": "websocket", "path": "/graphql", "headers": [], "query_string": b""}
        return RequestContext(HTTPConnection(scope), Response(), str(uuid.uuid4()), principal, session)

    # --- $connect, $default, $disconnect --------------------------------------------------------

    async def connection(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        event = SocketEvent.of(raw)
        if event.route == "$connect":
            return await self._connect(event)
        if event.route == "$disconnect":
            org_id = await self._org_of(event.connection_id)
            if org_id is not None:
                await self._end(org_id, event.connection_id)
            return {"statusCode": 200}
        try:
            await self._message(event)
        except Closed as closed:
            org_id = await self._org_of(event.connection_id)
            await self._close(event.endpoint, event.connection_id, closed, org_id)
        except DatastoreError:
            # DynamoDB did not answer: say so and close (the client reconnects); the items, if
            # any, expire with their TTL. Nothing of the failure reaches the client.
            log.exception("live connection %s: its message could not be handled", event.connection_id)
            unavailable = Closed(Close.UNAVAILABLE, "try again shortly")
            await self._close(event.endpoint, event.connection_id, unavailable, None)
        return {"statusCode": 200}

    async def _org_of(self, connection_id: str) -> OrgId | None:
        return await live_connections.org_of(self.services.datastore.table(GatewayScope()), connection_id)

    async def _connect(self, event: SocketEvent) -> dict[str, Any]:
        offered = [p.strip() for p in event.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
        if offered and PROTOCOL not in offered:
            return {"statusCode": 400, "body": f"the subprotocol must be {PROTOCOL}"}
        answer: dict[str, Any] = {"statusCode": 200}
        if offered:
            answer["headers"] = {"Sec-WebSocket-Protocol": PROTOCOL}
        authorization = event.headers.get("authorization")
        if authorization is None:
            return answer  # a browser: the credential comes in connection_init
        try:
            await self._admit(event, authorization, acknowledged=False)
        except Closed as refused:
            status = {Close.UNAUTHORIZED: 401, Close.FORBIDDEN: 403}.get(refused.close, 503)
            return {"statusCode": status, "body": refused.detail}
        return answer

    async def _admit(self, event: SocketEvent, authorization: str, *, acknowledged: bool) -> GatewayConnection:
        """Authenticate, check the caller is active, record the connection (Closed when refused)."""
        try:
            principal = await self.backend.principal_for(authorization)
        except CredentialUnavailable:
            raise Closed(Close.UNAVAILABLE, "the credential could not be checked: try again shortly") from None
        except AuthenticationError as refused:
            raise Closed(Close.FORBIDDEN, str(refused)) from None
        if principal is None:
            raise Closed(Close.UNAUTHORIZED, "no credential")
        org_id = await admit(principal, lambda caller: self._context(caller, None))
        at = now()
        expires = at + CONNECTION_LIFETIME
        token_expires = None
        if principal.expires_at is not None:
            token_expires = datetime.fromtimestamp(principal.expires_at, UTC)
            if principal.session_id is None:
                # A token from sign-in does not end the connection while its session lasts.
                expires = min(expires, token_expires)
        connection = GatewayConnection(
            org_id=org_id,
            connection_id=event.connection_id,
            subject=principal.subject,
            role=None if principal.role is None else principal.role.value,
            api_key=principal.api_key,
            session_id=principal.session_id,
            endpoint=event.endpoint,
            connected_at=at,
            token_expires_at=token_expires,
            expires_at=expires,
            acknowledged=acknowledged,
        )
        await live_connections.open_connection(self._tenant(org_id), connection)
        return connection

    async def _message(self, event: SocketEvent) -> None:
        check_size(event.body or "", self.services.settings.max_body_bytes)
        try:
            message = orjson.loads(event.body or "")
        except orjson.JSONDecodeError:
            raise Closed(Close.BAD_MESSAGE, "the message is not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise Closed(Close.BAD_MESSAGE, "a message is an object with a type")
        kind = message["type"]
        if kind == "ping":
            await self._post(event.endpoint, event.connection_id, _message(type="pong"))
        elif kind == "pong":
            return
        elif kind == "connection_init":
            await self._init(event, message.get("payload"))
        elif kind == "subscribe":
            await self._subscribe(event, message)
        elif kind == "complete":
            connection = await self._acknowledged(event)
            operation_id = message.get("id")
            if isinstance(operation_id, str):
                table = self._tenant(connection.org_id)
                await live_connections.unsubscribe(table, event.connection_id, operation_id)
        else:
            raise Closed(Close.BAD_MESSAGE, f"unknown message type {kind!r}")

    async def _init(self, event: SocketEvent, init_payload: object) -> None:
        if init_payload is not None and not isinstance(init_payload, dict):
            raise Closed(Close.FORBIDDEN, "the connection_init payload must be an object")
        known = await self._recorded(event.connection_id)
        if known is not None and known.acknowledged:
            raise Closed(Close.TOO_MANY_INITS, "Too many initialisation requests")
        authorization = (init_payload or {}).get("Authorization", (init_payload or {}).get("authorization"))
        if authorization is None:
            if known is None:
                raise Closed(
                    Close.UNAUTHORIZED, 'no credential: send connection_init with {"Authorization": "Bearer <token>"}'
                )
            # Authenticated by the handshake's header ($connect): acknowledged now.
            acknowledged = dataclasses.replace(known, acknowledged=True)
            await live_connections.open_connection(self._tenant(known.org_id), acknowledged)
        elif not isinstance(authorization, str):
            raise Closed(Close.FORBIDDEN, "Authorization must be a string")
        else:
            await self._admit(event, authorization, acknowledged=True)
        await self._post(event.endpoint, event.connection_id, _message(type="connection_ack"))

    async def _recorded(self, connection_id: str) -> GatewayConnection | None:
        org_id = await self._org_of(connection_id)
        if org_id is None:
            return None
        return await live_connections.get_connection(self._tenant(org_id), connection_id)

    async def _acknowledged(self, event: SocketEvent) -> GatewayConnection:
        connection = await self._recorded(event.connection_id)
        if connection is None or not connection.acknowledged:
            raise Closed(Close.UNAUTHORIZED, "Unauthorized")
        connection, over = await self._standing(connection)
        if over is not None:
            raise over
        return connection

    async def _standing(self, connection: GatewayConnection) -> tuple[GatewayConnection, Closed | None]:
        """The connection as it goes on, or why it is over (``_over``). At a sign-in token's
        expiry its session is read (expiry.py's rule, as on one host): while it is signed in the
        connection goes on, its item saying when to read the session again (a refresh moves
        that), so deliveries until then read nothing more."""
        over = _over(connection, now())
        if over is None or over.close is not Close.FORBIDDEN or connection.session_id is None:
            return connection, over
        try:
            until = await signed_in_until(self.services, principal_of(connection), "reconnect")
        except Closed as ended:
            return connection, ended
        at = datetime.fromtimestamp(until, UTC)
        table = self._tenant(connection.org_id)
        if not await live_connections.extend_token(table, connection.connection_id, at):
            return connection, Closed(Close.FORBIDDEN, "the connection was closed")
        extended = dataclasses.replace(connection, token_expires_at=at)
        return extended, _over(extended, now())

    async def _subscribe(self, event: SocketEvent, message: dict[str, Any]) -> None:
        connection = await self._acknowledged(event)
        operation_id = operation_id_of(message.get("id"))
        table = self._tenant(connection.org_id)
        settings = self.services.settings
        limit = settings.subscriptions_per_connection
        existing = await live_connections.subscriptions_of(table, event.connection_id, limit=limit + 1)
        if any(known.operation_id == operation_id for known in existing):
            raise Closed(Close.DUPLICATE, f"Subscriber for {operation_id} already exists")
        if len(existing) >= limit:
            await self._error(
                event, operation_id, f"at most {limit} subscriptions per connection", TOO_MANY_SUBSCRIPTIONS
            )
            return
        principal = principal_of(connection)
        place = self._resumable(connection)
        context = self._context(principal, OneShot(place=place))
        try:
            requested = operation_of(message.get("payload"))
            resolved = await self.persisted.resolve(requested, context)
            if resolved.query is None:
                raise bad_request("the subscribe message has no query")
        except TransportError as refused:
            context.session.end()
            await self._error(event, operation_id, str(refused), refused.code.value)
            return
        field = root_field(resolved.query, requested.operation_name)
        subscription = None
        if field is not None and field in FIELD_KINDS:
            subscription = GatewaySubscription(
                org_id=connection.org_id,
                connection_id=event.connection_id,
                operation_id=operation_id,
                field=field,
                document=resolved.query,
                variables=orjson.dumps(requested.variables or {}).decode(),
                operation_name=requested.operation_name,
                subscribed_at=now(),
                expires_at=connection.expires_at,
            )
            # Recorded before the check and replay run: what commits meanwhile is fanned out to it.
            await live_connections.subscribe(table, subscription)
        errors = await self._run(
            context, event, operation_id, resolved.query, requested.variables, requested.operation_name
        )
        if errors is None and subscription is not None and place.topic is not None and place.cursor is not None:
            await self._note(connection, operation_id, place)
        if errors is not None and place.resumed and place.topic is not None:
            # A resume its replay refused (too many events since): the next one starts from now.
            name = resume_points.subscription_hash(place.topic)
            assert connection.session_id is not None
            await resume_points.forget(self._points(connection), connection.subject, connection.session_id, name)
        if errors is not None or subscription is None:
            if subscription is not None:
                await live_connections.unsubscribe(table, event.connection_id, operation_id)
            if errors is not None:
                refusal = _message(id=operation_id, type="error", payload=errors)
                await self._post(event.endpoint, event.connection_id, refusal)
            else:
                await self._error(event, operation_id, "not a subscription field", "BAD_REQUEST")

    async def _note(self, connection: GatewayConnection, operation_id: str, place: ShotPlace) -> None:
        """Keep a session's subscription's place on its item (one UpdateItem), for ``_end``."""
        if connection.session_id is None or connection.api_key or place.topic is None or place.cursor is None:
            return
        table = self._tenant(connection.org_id)
        connection_id = connection.connection_id
        await live_connections.note_cursor(table, connection_id, operation_id, place.topic, place.cursor)

    async def _error(self, event: SocketEvent, operation_id: str, text: str, code: str) -> None:
        errors = [{"message": text, "extensions": {"code": code}}]
        await self._post(event.endpoint, event.connection_id, _message(id=operation_id, type="error", payload=errors))

    async def _run(
        self,
        context: RequestContext,
        event: SocketEvent,
        operation_id: str,
        document: str,
        variables: dict[str, Any] | None,
        operation_name: str | None,
    ) -> list[Any] | None:
        """Run the subscription once (its checks, and the replay ``after`` asks for), posting each
        event as ``next``; the errors of a refusal before any event, else None."""
        try:
            results = await self.schema.stream(
                document,
                variable_values=variables,
                context_value=context,
                operation_name=operation_name,
                allowed_operation_types=(OperationType.SUBSCRIPTION,),
            )
            async with aclosing(results):
                async for result in results:
                    if not isinstance(result, ExecutionResult):
                        continue
                    if isinstance(result, PreExecutionError) or (result.data is None and result.errors):
                        return [error.formatted for error in result.errors or []]
                    next_message = _message(id=operation_id, type="next", payload=payload(result))
                    if not await self._post(event.endpoint, event.connection_id, next_message):
                        return None
            return None
        finally:
            context.session.end()

    # --- the stream's fan-out ---------------------------------------------------------------------

    async def stream(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """One batch of the table's stream records (Lambda's DynamoDB Streams event)."""
        by_org: dict[str, list[StreamRecord]] = defaultdict(list)
        for entry in raw.get("Records") or ():
            record = StreamRecord.of(entry, shard_id=str(entry.get("eventID", "")))
            org_id, kind = record.org_id, record.kind
            # Routed by organisation and kind before anything is decoded.
            if org_id is None:
                continue
            if (
                (kind == AUDIT_EVENT and record.name is ChangeName.INSERT)
                or (kind in REVOKING and record.name is ChangeName.MODIFY)
                # A sign-out everywhere's mark is put: its first is an INSERT.
                or (kind == SIGNED_OUT and record.name is ChangeName.INSERT)
            ):
                by_org[org_id].append(record)
        delivered = 0
        for org_id, batch in by_org.items():
            delivered += await self._fan_out(org_id, batch)
        return {"organisations": len(by_org), "delivered": delivered}

    async def _fan_out(self, org_id: str, batch: list[StreamRecord]) -> int:
        table = self._tenant(org_id)
        live = await live_connections.live_items(table)
        if not live.connections:
            return 0  # nobody listens: nothing is decoded
        changes = [records.decode(record) for record in batch]
        # The batch's changes to callers' standing first, so their connections close without
        # a round of reads. A transaction's records come in no promised order, nor in one batch
        # (DynamoDB Local's stream has a revocation's audit event before the key it revokes; on
        # AWS they may be on different shards): each delivery reads the caller's standing anyway,
        # an API key's own status included (graphql_api/auth/active.py).
        for change in changes:
            if change.kind != AUDIT_EVENT:
                await self._revoke(live, change)
        delivered = 0
        for change in changes:
            if change.kind == AUDIT_EVENT and isinstance(change.new, AuditEvent):
                delivered += await self._deliver(org_id, live, change.new)
        return delivered

    async def _deliver(self, org_id: str, live: live_connections.LiveItems, event: AuditEvent) -> int:
        wanted: dict[str, list[GatewaySubscription]] = defaultdict(list)
        for subscription in live.subscriptions:
            kinds = FIELD_KINDS.get(subscription.field, frozenset())
            if kinds is None or event.entity_type in kinds:
                wanted[subscription.connection_id].append(subscription)
        if not wanted:
            return 0
        round_ = event_round(self.services, org_id)
        delivered = 0
        for connection_id, subscriptions in wanted.items():
            connection = live.connections.pop(connection_id, None)
            if connection is None:
                continue  # closed in this batch
            connection, over = await self._standing(connection)
            if over is not None:
                await self._close(connection.endpoint, connection_id, over, org_id)
                continue
            principal = principal_of(connection)
            shot = OneShot(event, round_)
            check = self._context(principal, shot)
            assert isinstance(check.session, LiveSession)
            check.session.begin_event(round_)
            try:
                await check_active(check, key_status=True)
            except ApiError as refused:
                await self._close(connection.endpoint, connection_id, Closed(Close.FORBIDDEN, str(refused)), org_id)
                continue
            finally:
                check.session.end()
            live.connections[connection_id] = connection
            for subscription in subscriptions:
                outcome = await self._execute(connection, subscription, shot)
                if outcome == "gone":
                    log.info("live connection %s is gone: its items are deleted", connection_id)
                    await self._end(org_id, connection_id)
                    live.connections.pop(connection_id, None)
                    break
                delivered += outcome == "delivered"
        return delivered

    async def _execute(self, connection: GatewayConnection, subscription: GatewaySubscription, shot: OneShot) -> str:
        """One subscription's execution with one event: "delivered", "filtered", "ended" (an error
        ended it: ``next`` with the error, then ``complete``) or "gone" (410)."""
        shot = OneShot(shot.event, shot.round)  # its own place: where this subscription got to
        context = self._context(principal_of(connection), shot)
        endpoint, connection_id, operation_id = connection.endpoint, connection.connection_id, subscription.operation_id
        outcome = "filtered"
        try:
            results = await self.schema.stream(
                subscription.document,
                variable_values=orjson.loads(subscription.variables),
                context_value=context,
                operation_name=subscription.operation_name,
                allowed_operation_types=(OperationType.SUBSCRIPTION,),
            )
            async with aclosing(results):
                async for result in results:
                    if not isinstance(result, ExecutionResult):
                        continue
                    message = _message(id=operation_id, type="next", payload=payload(result))
                    if not await self._post(endpoint, connection_id, message):
                        return "gone"
                    if isinstance(result, PreExecutionError) or (result.data is None and result.errors):
                        outcome = "ended"
                        break
                    outcome = "delivered"
        finally:
            context.session.end()
        if outcome == "delivered":
            await self._note(connection, operation_id, shot.place)
        if outcome == "ended":
            if not await self._post(endpoint, connection_id, _message(id=operation_id, type="complete")):
                return "gone"
            table = self._tenant(connection.org_id)
            await live_connections.unsubscribe(table, connection_id, operation_id)
        return outcome

    async def _revoke(self, live: live_connections.LiveItems, change: records.ChangeEvent) -> None:
        """A change to a caller's standing closes their connections at once (every delivery checks too)."""
        new, why = change.new, None
        affected = list(live.connections.values())
        if change.kind == "Organization":
            if getattr(new, "status", OrganizationStatus.ACTIVE) is not OrganizationStatus.ACTIVE:
                why = "the organisation is not active"
        elif change.kind == "Employee":
            emp_id = getattr(new, "emp_id", None)
            affected = [c for c in affected if not c.api_key and c.subject == emp_id]
            if getattr(new, "status", None) is not EmployeeStatus.ACTIVE:
                why = "the employee is not active"
            elif getattr(change.old, "role", None) is not getattr(new, "role", None):
                why = "the employee's role changed; sign in again"
        elif change.kind == "ApiKey":
            key_id = getattr(new, "key_id", None)
            affected = [c for c in affected if c.api_key and c.subject == key_id]
            if getattr(new, "status", None) is ApiKeyStatus.REVOKED:
                why = "the API key was revoked"
        elif change.kind == "Session":
            session_id = getattr(new, "session_id", None)
            affected = [c for c in affected if session_id is not None and c.session_id == session_id]
            if getattr(new, "status", None) is not SessionStatus.ACTIVE:
                why = "the session ended: sign in again"
        elif change.kind == SIGNED_OUT:
            emp_id, at = getattr(new, "emp_id", None), getattr(new, "at", None)
            affected = [c for c in affected if signed_out_by(principal_of(c), emp_id, at)]
            why = "signed out everywhere: sign in again"
        if why is None:
            return
        for connection in affected:
            live.connections.pop(connection.connection_id, None)
            closed = Closed(Close.FORBIDDEN, why)
            await self._close(connection.endpoint, connection.connection_id, closed, connection.org_id)
