"""The Starlette application: /graphql (POST JSON, GET queries, GraphiQL), /healthz and /readyz."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

import orjson
import strawberry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.extensions import SchemaExtension
from ulid import ULID

from datastore import calls
from datastore.probe import probe_client
from datastore.store import Datastore
from graphql_api.active import ActiveCaller
from graphql_api.auth import TokenVerifier
from graphql_api.authentication import BearerTokenBackend, on_auth_error, principal_of
from graphql_api.config import ApiSettings
from graphql_api.context import RequestContext, Services
from graphql_api.cost import Cost
from graphql_api.cursors import CursorCodec
from graphql_api.health import HealthRoutes, Readiness
from graphql_api.lifetime import DEADLINE, SESSION, RequestLifetime
from graphql_api.limits import limit_extensions
from graphql_api.limits.body_size import MaxBodySize
from graphql_api.schema import build_schema
from graphql_api.session import Deadline, RequestSession
from graphql_api.signin import TokenExchange

log = logging.getLogger("hr.app")

REQUEST_ID = "hr.request_id"


class GraphQLView(GraphQL[RequestContext, None]):
    def __init__(self, schema: strawberry.Schema, services: Services) -> None:
        super().__init__(schema, graphql_ide="graphiql" if services.settings.graphiql else None)
        self.services = services

    async def get_context(self, request: Request, response: Response) -> RequestContext:  # type: ignore[override]
        principal = principal_of(request)
        deadline = request.scope.get(DEADLINE) or Deadline.after(self.services.settings.request_timeout_seconds)
        session = RequestSession(self.services, principal, deadline)
        request.scope[SESSION] = session  # the request's lifetime cancels it (graphql_api/lifetime.py)
        # Blocking calls copy the context they are issued from: this request's log.
        calls.current_log.set(session.call_log)
        return RequestContext(request, response, request.scope[REQUEST_ID], principal, session)

    def encode_json(self, data: object) -> bytes:
        return orjson.dumps(data)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The caller was authenticated by the middleware (graphql_api/authentication.py)."""
        if scope["type"] == "http":
            request_id = Request(scope).headers.get("x-request-id") or str(ULID())
            scope[REQUEST_ID] = request_id[:64]
        await super().__call__(scope, receive, send)


def create_app(datastore: Datastore, settings: ApiSettings | None = None) -> Starlette:
    settings = settings or ApiSettings.from_env()
    executor = ThreadPoolExecutor(settings.io_threads, thread_name_prefix="dynamodb-io")
    services = Services(settings, datastore, executor, CursorCodec(settings.jwt_secret))
    # Limits first (they refuse before anything is loaded), then the caller's active check.
    extensions: list[Callable[[], SchemaExtension]] = [*limit_extensions(settings), ActiveCaller]
    if settings.cost_in_response:
        extensions.append(Cost)
    view = GraphQLView(build_schema(extensions, batch_max_operations=settings.batch_max_operations), services)

    readiness = Readiness(probe_client(datastore.client), datastore.table_name)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        executor.shutdown(wait=False, cancel_futures=True)
        readiness.close()

    return Starlette(
        routes=[
            Route("/graphql", RequestLifetime(view, settings.request_timeout_seconds), methods=["GET", "POST"]),
            Route("/auth/token", TokenExchange(services).endpoint, methods=["POST"]),
        ],
        lifespan=lifespan,
        middleware=[
            # Outermost: /healthz and /readyz never wait on authentication or any limit.
            Middleware(HealthRoutes, readiness=readiness),
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "X-Request-Id"],
                max_age=600,
            ),
            Middleware(MaxBodySize, max_bytes=settings.max_body_bytes),
            # After CORS, so a 401 carries CORS headers and preflights (no token) pass.
            Middleware(
                AuthenticationMiddleware,
                backend=BearerTokenBackend(TokenVerifier(settings)),
                on_error=on_auth_error,
            ),
        ],
    )
