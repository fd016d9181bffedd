"""The Starlette application: /graphql (POST JSON, GET queries, GraphiQL) and /healthz."""

from __future__ import annotations

import asyncio
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
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.extensions import SchemaExtension

from datastore import calls
from datastore.store import Datastore
from graphql_api.active import ActiveCaller
from graphql_api.auth import TokenVerifier
from graphql_api.authentication import BearerTokenBackend, on_auth_error, principal_of
from graphql_api.config import ApiSettings
from graphql_api.context import RequestContext, Services
from graphql_api.cost import Cost
from graphql_api.cursors import CursorCodec
from graphql_api.limits import limit_extensions
from graphql_api.limits.body_size import MaxBodySize
from graphql_api.limits.body_timeout import MaxBodyTime
from graphql_api.limits.concurrency import MaxConcurrentRequests
from graphql_api.observability.access_log import AccessLog
from graphql_api.observability.metrics import Metrics
from graphql_api.observability.record import REQUEST_ID, start
from graphql_api.observability.tracing import configure_tracing
from graphql_api.schema import build_schema
from graphql_api.signin import TokenExchange

log = logging.getLogger("hr.app")


class GraphQLView(GraphQL[RequestContext, None]):
    def __init__(self, schema: strawberry.Schema, services: Services) -> None:
        super().__init__(schema, graphql_ide="graphiql" if services.settings.graphiql else None)
        self.services = services

    async def get_context(self, request: Request, response: Response) -> RequestContext:  # type: ignore[override]
        context = RequestContext(
            request=request,
            response=response,
            services=self.services,
            request_id=request.scope[REQUEST_ID],
            principal=principal_of(request),
        )
        # Blocking calls copy the context they are issued from: this request's log.
        calls.current_log.set(context.call_log)
        return context

    def encode_json(self, data: object) -> bytes:
        return orjson.dumps(data)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The caller was authenticated by the middleware (graphql_api/authentication.py)."""
        if scope["type"] == "http" and REQUEST_ID not in scope:
            start(scope)  # a view served without the access log (observability/access_log.py)
        await super().__call__(scope, receive, send)


def create_app(datastore: Datastore, settings: ApiSettings | None = None) -> Starlette:
    settings = settings or ApiSettings.from_env()
    executor = ThreadPoolExecutor(settings.io_threads, thread_name_prefix="dynamodb-io")
    services = Services(settings, datastore, executor, CursorCodec(settings.jwt_secret))
    configure_tracing(settings.otel_endpoint, datastore.client)
    # Limits first (they refuse before anything is loaded), then the caller's active check.
    extensions: list[Callable[[], SchemaExtension]] = [*limit_extensions(settings), ActiveCaller]
    if settings.cost_in_response:
        extensions.append(Cost)
    view = GraphQLView(build_schema(extensions, batch_max_operations=settings.batch_max_operations), services)

    async def healthz(_request: Request) -> JSONResponse:
        reachable = await asyncio.get_running_loop().run_in_executor(executor, datastore.reachable)
        return JSONResponse(
            {"status": "ok" if reachable else "unavailable", "dynamodb": reachable},
            status_code=200 if reachable else 503,
        )

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        executor.shutdown(wait=False, cancel_futures=True)

    return Starlette(
        routes=[
            Route("/graphql", view, methods=["GET", "POST"]),
            Route("/auth/token", TokenExchange(services).endpoint, methods=["POST"]),
            Route("/healthz", healthz),
        ],
        lifespan=lifespan,
        middleware=[
            # One log line and the metrics of every request, refused ones included: outermost.
            Middleware(
                AccessLog,
                metrics=Metrics(
                    max_operations=settings.metrics_max_operations, max_tenants=settings.metrics_max_tenants
                ),
                emf=settings.lambda_function is not None,
            ),
            # Slow clients (limits/body_timeout.py): outermost, so nothing inside waits on a body.
            Middleware(MaxBodyTime, timeout_seconds=settings.body_timeout_seconds),
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "X-Request-Id"],
                max_age=600,
            ),
            Middleware(MaxBodySize, max_bytes=settings.max_body_bytes),
            # In-flight cap (limits/concurrency.py): inside the body readers, so a slot is taken
            # only once the whole body has arrived.
            Middleware(MaxConcurrentRequests, max_requests=settings.max_concurrent_requests),
            # After CORS, so a 401 carries CORS headers and preflights (no token) pass.
            Middleware(
                AuthenticationMiddleware,
                backend=BearerTokenBackend(TokenVerifier(settings)),
                on_error=on_auth_error,
            ),
        ],
    )
