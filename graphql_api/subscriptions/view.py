"""The WebSocket at /graphql: Strawberry's ASGI view, for its WebSocket branch only.

Strawberry's view checks the handshake's Origin (a socket carries no CORS: only CORS_ORIGINS
may open one from a browser page on another origin), picks the subprotocol (graphql-transport-ws
only; the legacy graphql-ws is refused) and runs the protocol's handler, ours
(websocket.py). HTTP requests never reach it: the app routes only the WebSocket here
(graphql_api/app.py), and GraphQL over HTTP is graphql_api/http/'s.
"""

from __future__ import annotations

from datetime import timedelta

import strawberry
from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

from graphql_api.auth.backend import BearerTokenBackend
from graphql_api.http.persisted import PersistedDocuments
from graphql_api.request.principal import principal_of
from graphql_api.request.services import Services
from graphql_api.subscriptions.hub import LiveHub
from graphql_api.subscriptions.websocket import LiveWebSocketHandler, SocketContext


class LiveSocketView(GraphQL[SocketContext, None]):
    graphql_transport_ws_handler_class = LiveWebSocketHandler

    def __init__(
        self,
        schema: strawberry.Schema,
        services: Services,
        hub: LiveHub,
        backend: BearerTokenBackend,
        persisted: PersistedDocuments,
    ) -> None:
        settings = services.settings
        super().__init__(
            schema,
            graphql_ide=None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=settings.subscription_init_timeout_seconds),
            allowed_origins=list(settings.cors_origins),
        )
        self.services = services
        self.hub = hub
        self.backend = backend
        self.persisted = persisted

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> SocketContext:
        # One per socket; each subscription gets a context of its own (websocket.py).
        assert isinstance(request, WebSocket)
        return SocketContext(request, principal_of(request))
