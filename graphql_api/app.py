"""The Starlette application: /graphql (POST JSON, GET queries, GraphiQL) and /healthz.

GraphiQL's page, assets and development sign-in live in graphql_api/graphiql/.
"""

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
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.extensions import SchemaExtension
from ulid import ULID

from datastore import calls
from datastore.store import Datastore
from graphql_api import graphiql
from graphql_api.active import ActiveCaller
from graphql_api.auth import TokenVerifier, bearer_token
from graphql_api.config import ApiSettings
from graphql_api.context import RequestContext, Services
from graphql_api.cost import Cost
from graphql_api.cursors import CursorCodec
from graphql_api.errors import ApiError
from graphql_api.limits import limit_extensions
from graphql_api.limits.body_size import MaxBodySize
from graphql_api.schema import build_schema

log = logging.getLogger("hr.app")

PRINCIPAL = "hr.principal"
REQUEST_ID = "hr.request_id"


class GraphQLView(GraphQL[RequestContext, None]):
    def __init__(self, schema: strawberry.Schema, services: Services) -> None:
        super().__init__(schema, graphql_ide="graphiql" if services.settings.graphiql else None)
        self.services = services
        self.verifier = TokenVerifier(services.settings)

    async def get_context(self, request: Request, response: Response) -> RequestContext:  # type: ignore[override]
        context = RequestContext(
            request=request,
            response=response,
            services=self.services,
            request_id=request.scope[REQUEST_ID],
            principal=request.scope[PRINCIPAL],
        )
        # Blocking calls copy the context they are issued from: this request's log.
        calls.current_log.set(context.call_log)
        return context

    async def render_graphql_ide(self, request: Request) -> Response:
        """Our own GraphiQL page (local assets, strict CSP), not Strawberry's CDN page."""
        settings = self.services.settings
        return graphiql.page_response(request.url.path, sign_in=settings.development)

    def encode_json(self, data: object) -> bytes:
        return orjson.dumps(data)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Authenticate before GraphQL runs: a bad token fails the request as a whole."""
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope)
        request_id = request.headers.get("x-request-id") or str(ULID())
        scope[REQUEST_ID] = request_id[:64]
        try:
            token = bearer_token(request.headers.get("authorization"))
            scope[PRINCIPAL] = None if token is None else self.verifier.verify(token)
        except ApiError as error:
            body = {"errors": [{"message": str(error), "extensions": error.extensions}]}
            await JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
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
            Route("/healthz", healthz),
            *graphiql.routes(services),
        ],
        lifespan=lifespan,
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "X-Request-Id"],
                max_age=600,
            ),
            Middleware(MaxBodySize, max_bytes=settings.max_body_bytes),
        ],
    )
