"""graphql-transport-ws over WebSocket at /graphql: Strawberry's handler, with our caller, limits and closes.

Strawberry implements the protocol (graphql-ws's PROTOCOL.md: connection_init and its ack,
subscribe, next, error, complete, ping and pong, the init timeout 4408, a second init 4429,
a subscribe before the ack 4401, a duplicate id 4409); this handler overrides what it leaves
to the application:

- Every message is read by this handler: one over MAX_BODY_BYTES (an HTTP body's bound) is
  closed 1009 before it is parsed, and a subscribe message's id over 128 characters 4400
  (messages.py).
- ``connection_init`` authenticates through the same backend as HTTP (graphql_api/auth/
  backend.py), from the payload's ``Authorization`` (``"Bearer <token>"`` or an API key; a
  browser cannot set a WebSocket's headers) or else the handshake's header, then runs the
  caller's active check and counts the connection against its limits (hub.py). No credential
  is 4401; a bad, expired or refused one 4403; too many connections 1013 (closing.py).
- ``subscribe`` runs only subscriptions (queries and mutations go over HTTP, with its limits),
  at most SUBSCRIPTIONS_PER_CONNECTION at once (past it, that subscription's ``error`` with
  TOO_MANY_SUBSCRIPTIONS, before its payload is read), each with a context and a live session
  of its own (session.py); trusted documents and Apollo's persisted queries resolve as over
  HTTP (graphql_api/http/persisted.py), an empty ``query`` beside the id included (graphql-ws
  always sends one).
- The server pings every SUBSCRIPTION_KEEPALIVE_SECONDS and closes 4408 when the previous ping
  was not answered; the connection ends 4408 after SUBSCRIPTION_LIFETIME_SECONDS. A token
  from sign-in outlives its expiry here while its session is signed in: each delivery checks
  the caller's standing anyway, and the session's end (sign-out, a reused refresh token,
  signing out everywhere) closes the connection 4403 at once (hub.py), its expiry when it
  comes (checked again then, as a refresh moves it). Any other token's expiry ends the
  connection 4403 (reconnect with a fresh one).
- When the connection ends, where each of its subscriptions got to is saved for a reconnect
  to any process (resumes.py): before the close frame when the server closes it (at SIGTERM
  too: the protocol, graphql_api/entrypoints/websocket_protocol.py, leaves that frame to this
  handler), once its subscriptions have stopped when the client closed it or it dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any, Protocol, cast

import orjson
from starlette.authentication import AuthenticationError
from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    CompleteMessage,
    ConnectionInitMessage,
    Message,
    PongMessage,
    SubscribeMessage,
)
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType
from strawberry.utils.aio import aclosing

from graphql_api.auth.backend import BearerTokenBackend, CredentialUnavailable
from graphql_api.http.errors import TransportError, bad_request
from graphql_api.http.persisted import PersistedDocuments
from graphql_api.http.request import operation_of
from graphql_api.request.context import RequestContext
from graphql_api.request.principal import Principal
from graphql_api.request.services import Services
from graphql_api.request.session import Deadline
from graphql_api.subscriptions import live_metrics
from graphql_api.subscriptions.admission import admit
from graphql_api.subscriptions.closing import Close, Closed
from graphql_api.subscriptions.connection import LiveConnection
from graphql_api.subscriptions.context import LiveContext
from graphql_api.subscriptions.expiry import until_over
from graphql_api.subscriptions.hub import LiveHub
from graphql_api.subscriptions.messages import check_size, operation_id_of
from graphql_api.subscriptions.resumes import ResumeKey
from graphql_api.subscriptions.session import LiveSession

log = logging.getLogger("hr.live")

TOO_MANY_SUBSCRIPTIONS = "TOO_MANY_SUBSCRIPTIONS"


@dataclass(eq=False)
class SocketContext:
    """What Strawberry keeps for one WebSocket: the socket, and the caller its handshake's header named."""

    websocket: WebSocket
    principal: Principal | None
    connection_params: dict[str, object] | None = None


class LiveView(Protocol):
    """What the handler needs of the view that accepted the socket (graphql_api/app.py)."""

    services: Services
    hub: LiveHub
    backend: BearerTokenBackend
    persisted: PersistedDocuments


class LiveWebSocketHandler(BaseGraphQLTransportWSHandler[SocketContext, None]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connection: LiveConnection | None = None
        self.contexts: dict[str, RequestContext] = {}
        # Each operation's ``extensions`` as subscribed (``explain``: execution/explain.py).
        self.extensions: dict[str, dict[str, Any] | None] = {}
        self._timers: list[asyncio.Task[None]] = []
        self._ping_unanswered = False
        # A message was not sent (the socket closing or gone): no event after it is taken as sent.
        self.unsent = False
        # Told the server is stopping (the protocol waits for this handler's close frame).
        self.going_away = False

    @property
    def live(self) -> LiveView:
        return cast(LiveView, self.view)

    @property
    def services(self) -> Services:
        return self.live.services

    @property
    def hub(self) -> LiveHub:
        return self.live.hub

    # --- the connection ----------------------------------------------------------------------------

    async def handle(self) -> None:
        self.on_request_accepted()
        try:
            await self._read()
        finally:
            if self.going_away:
                await self._go_away()
            # Where its subscriptions got to, saved once they have stopped (resumes.py): the
            # socket is gone (the client closed it, the network dropped) or closed already.
            subscribed = self._resume_keys()
            await self.shutdown()
            await self._save_resumes(subscribed)
            for timer in self._timers:
                timer.cancel()
            if self.connection is not None:
                self.hub.release(self.connection)
            if self.connection is not None:
                live_metrics.connection_ended(self.connection, "websocket")

    async def _read(self) -> None:
        """Strawberry's loop, with each message's size checked before it is parsed."""
        websocket = self.context.websocket
        while websocket.application_state != WebSocketState.DISCONNECTED:
            try:
                text = await websocket.receive_text()
            except WebSocketDisconnect as gone:
                # The server stopping (graphql_api/entrypoints/websocket_protocol.py): the
                # socket is still open, for this handler to close once it has saved.
                self.going_away = (gone.code, gone.reason) == (Close.GOING_AWAY.code, Close.GOING_AWAY.reason)
                return
            except KeyError:  # a binary frame
                await self.handle_invalid_message("WebSocket message type must be text")
                return
            try:
                check_size(text, self.services.settings.max_body_bytes)
                message = orjson.loads(text)
            except Closed as refused:
                await self.close_with(refused)
                return
            except orjson.JSONDecodeError:
                await self.handle_invalid_message("WebSocket message must be valid JSON")
                return
            if not isinstance(message, dict):
                await self.handle_invalid_message("Failed to parse message")
                return
            await self.handle_message(cast(Message, message))

    async def _go_away(self) -> None:
        """Close 1001 as the server stops: nothing sent after this, the subscriptions' places
        saved, then the close frame (close_with)."""
        going_away = Closed(Close.GOING_AWAY)
        if self.connection is None:
            await self.close_with(going_away)
            return
        self.connection.close(going_away)
        await self.connection.until_closed()

    async def close_with(self, closed: Closed) -> None:
        # Before the close frame: the client reconnects when it reads it, maybe to another process.
        await self._save_resumes(self._resume_keys())
        with contextlib.suppress(Exception):  # the peer may be gone already
            await self.websocket.close(code=closed.close.code, reason=closed.reason())

    async def send_message(self, message: Message) -> None:
        """As a text frame, as the protocol has it (Strawberry's adapter sends the view's bytes as binary)."""
        if self.connection is not None and self.connection.closed is not None:
            self.unsent = True
            return  # closing: nothing more goes out
        try:
            await self.context.websocket.send_text(orjson.dumps(message).decode())
        except (WebSocketDisconnect, RuntimeError):
            self.unsent = True  # gone, or closed meanwhile: the handler's loop ends on its own

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        if self.connection_timed_out:
            return
        if self.connection_init_timeout_task:
            self.connection_init_timeout_task.cancel()
        payload = message.get("payload") or {}
        if not isinstance(payload, dict):
            await self.close_with(Closed(Close.FORBIDDEN, "the connection_init payload must be an object"))
            return
        if self.connection_init_received:
            await self.websocket.close(code=4429, reason="Too many initialisation requests")
            return
        self.connection_init_received = True
        self.context.connection_params = payload
        try:
            connection = await self._admit(payload)
        except Closed as refused:
            live_metrics.closed(refused.close)
            await self.close_with(refused)
            return
        self.connection = connection
        await self.send_message({"type": "connection_ack"})
        self.connection_acknowledged = True
        self._timers = [
            asyncio.create_task(self._keep_alive()),
            asyncio.create_task(until_over(self.services, connection, again="reconnect")),
        ]

    async def _admit(self, payload: dict[str, object]) -> LiveConnection:
        principal = await self._caller(payload)
        await admit(principal, lambda caller: self._context(caller, None))
        hub = self.hub
        if not hub.available:
            raise Closed(Close.UNAVAILABLE, "live updates are not served by this process")
        connection = LiveConnection(principal, self.services.settings.subscription_queue_events, self.close_with)
        hub.admit(connection)  # Closed(TOO_MANY) past a bound
        return connection

    async def _caller(self, payload: dict[str, object]) -> Principal:
        authorization = payload.get("Authorization", payload.get("authorization"))
        if authorization is None:
            principal = self.context.principal  # the handshake's own header, checked by the middleware
            if principal is None:
                raise Closed(
                    Close.UNAUTHORIZED,
                    'no credential: send connection_init with {"Authorization": "Bearer <token>"}',
                )
            return principal
        if not isinstance(authorization, str):
            raise Closed(Close.FORBIDDEN, "Authorization must be a string")
        try:
            found = await self.live.backend.principal_for(authorization)
        except CredentialUnavailable:
            raise Closed(Close.UNAVAILABLE, "the credential could not be checked: try again shortly") from None
        except AuthenticationError as refused:
            raise Closed(Close.FORBIDDEN, str(refused)) from None
        if found is None:
            raise Closed(Close.UNAUTHORIZED, "no credential")
        return found

    async def _keep_alive(self) -> None:
        period = self.services.settings.subscription_keepalive_seconds
        while True:
            await asyncio.sleep(period)
            if self._ping_unanswered:
                assert self.connection is not None
                self.connection.close(Closed(Close.TIMED_OUT, f"no pong to the ping sent {period:g} s ago"))
                return
            self._ping_unanswered = True
            await self.send_message({"type": "ping"})

    async def handle_pong(self, message: PongMessage) -> None:
        self._ping_unanswered = False

    # --- subscriptions -----------------------------------------------------------------------------

    def _context(self, principal: Principal, connection: LiveConnection | None) -> RequestContext:
        timeout = self.services.settings.request_timeout_seconds
        session = LiveSession(self.services, principal, Deadline.after(timeout), connection=connection)
        return LiveContext(self.context.websocket, Response(), str(uuid.uuid4()), principal, session, hub=self.hub)

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        if not self.connection_acknowledged or self.connection is None:
            await self.websocket.close(code=4401, reason="Unauthorized")
            return
        try:
            operation_id = operation_id_of(message.get("id"))
        except Closed as refused:
            await self.close_with(refused)
            return
        if operation_id in self.operations:
            await self.websocket.close(code=4409, reason=f"Subscriber for {operation_id} already exists")
            return
        limit = self.services.settings.subscriptions_per_connection
        if len(self.operations) >= limit:
            await self._refuse(operation_id, f"at most {limit} subscriptions per connection", TOO_MANY_SUBSCRIPTIONS)
            return
        context = self._context(self.connection.principal, self.connection)
        try:
            requested = operation_of(message["payload"])
            resolved = await self.live.persisted.resolve(requested, context)
            if resolved.query is None:
                raise bad_request("the subscribe message has no query")
        except TransportError as refused:
            await self._refuse(operation_id, str(refused), refused.code.value)
            return
        operation: Operation[SocketContext, None] = Operation(
            self, operation_id, resolved.query, requested.variables, requested.operation_name
        )
        self.contexts[operation_id] = context
        self.extensions[operation_id] = requested.extensions
        self.operations[operation_id] = operation
        operation.task = asyncio.create_task(self.run_operation(operation))

    async def handle_complete(self, message: CompleteMessage) -> None:
        # The client is done with it: a reconnect's subscription to the same starts from now.
        context = self.contexts.get(message["id"])
        key = context.session.resume_key if context is not None and isinstance(context.session, LiveSession) else None
        await super().handle_complete(message)  # stopped first: it remembers nothing more
        if key is not None:
            await self.hub.resumes.forget(key)

    def _resume_keys(self) -> list[ResumeKey]:
        """The keys of this connection's running subscriptions that a reconnect may resume."""
        return [
            context.session.resume_key
            for context in self.contexts.values()
            if isinstance(context.session, LiveSession) and context.session.resume_key is not None
        ]

    async def _save_resumes(self, keys: list[ResumeKey]) -> None:
        if keys and self.connection is not None:
            await self.hub.resumes.save(keys, self.connection)

    async def _refuse(self, operation_id: str, message: str, code: str) -> None:
        await self.send_message(
            {"id": operation_id, "type": "error", "payload": [{"message": message, "extensions": {"code": code}}]}
        )

    async def run_operation(self, operation: Operation[SocketContext, None]) -> None:
        context = self.contexts[operation.id]
        try:
            results = await self.schema.stream(
                operation.query,
                variable_values=operation.variables,
                context_value=context,
                operation_name=operation.operation_name,
                operation_extensions=self.extensions.get(operation.id),
                allowed_operation_types=(OperationType.SUBSCRIPTION,),
            )
            first = True
            async with aclosing(results):
                async for result in results:
                    # Refused before any event (a document error, a caller not allowed): the
                    # protocol's ``error``; an error after events is their ``next``, then complete.
                    if not isinstance(result, ExecutionResult):
                        return  # no incremental delivery here
                    refused = isinstance(result, PreExecutionError) or (result.data is None and bool(result.errors))
                    if first and refused:
                        await operation.send_initial_errors(result.errors or [])
                        return
                    first = False
                    await operation.send_next(result)
                    if self.unsent:
                        # Not sent: the subscription's generator is not resumed, so it does not
                        # remember the event as sent (resumes.py) and a reconnect gets it again.
                        return
            await operation.send_operation_message({"id": operation.id, "type": "complete"})
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug: the subscription ends, and says so
            log.exception("subscription %s ended by an unexpected error", operation.id)
            with contextlib.suppress(Exception):
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
        finally:
            self.contexts.pop(operation.id, None)
            self.extensions.pop(operation.id, None)
            self.operations.pop(operation.id, None)
            context.session.end()
