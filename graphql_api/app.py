"""The Starlette application: /graphql (POST JSON, GET queries, GraphiQL, subscriptions over
WebSocket, Server-Sent Events and multipart), /auth/token, /auth/discovery, /export, /healthz and /readyz.

A request to /graphql goes through the middlewares (request id, health, access log, hosts,
body bounds, CORS, gzip, the in-flight cap, authentication) to its lifetime
(graphql_api/request/lifetime.py), which makes its session and context under its deadline
and hands the context to ``graphql_endpoint``: GraphiQL's page (graphql_api/graphiql/) for a
browser's visit, else the GraphQL-over-HTTP transport (graphql_api/http/: request parsing,
persisted documents, status codes, encoding), which runs the schema. Health is
graphql_api/http/health.py's. A WebSocket at /graphql is a subscription's (graphql-transport-ws,
graphql_api/subscriptions/), and so is a request whose Accept asks for a stream (Server-Sent
Events, multipart: graphql_api/subscriptions/over_http.py), fed by the process's live hub, which
the app starts and stops with itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import strawberry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from strawberry.extensions import SchemaExtension

from datastore.aws.probe import probing
from datastore.table.store import Datastore
from graphql_api import graphiql
from graphql_api.auth.active import ActiveCaller
from graphql_api.auth.api_keys import ApiKeyAuthenticator
from graphql_api.auth.backend import BearerTokenBackend, on_auth_error
from graphql_api.auth.home_realm import PATH as DISCOVERY_PATH
from graphql_api.auth.home_realm import HomeRealmDiscovery
from graphql_api.auth.read_only_keys import ReadOnlyKeys
from graphql_api.auth.signin import TokenExchange
from graphql_api.auth.tokens import TokenVerifier
from graphql_api.execution.cost import Cost
from graphql_api.execution.documents import Documents
from graphql_api.execution.explain import Explain
from graphql_api.execution.operation import CachedDocuments
from graphql_api.execution.plan.extension import CompiledPlans
from graphql_api.host import worker_pool
from graphql_api.http.export import ExportDownload
from graphql_api.http.health import HealthRoutes, Readiness
from graphql_api.http.hosts import AllowedHosts
from graphql_api.http.operation_name import OperationNameRequired
from graphql_api.http.persisted import PersistedDocuments, StoreRegistered, load_manifest
from graphql_api.http.transport import HttpTransport
from graphql_api.http.unlisted import UnlistedDocuments
from graphql_api.limits.body_size import MaxBodySize
from graphql_api.limits.body_timeout import MaxBodyTime
from graphql_api.limits.concurrency import MaxConcurrentRequests
from graphql_api.limits.configured import limit_extensions, tenant_buckets
from graphql_api.observability import request_id
from graphql_api.observability.access_log import AccessLog
from graphql_api.observability.labels import operation_names
from graphql_api.observability.metrics import Metrics
from graphql_api.observability.tracing import configure_tracing
from graphql_api.request.context import RequestContext, Services
from graphql_api.request.cursors import CursorCodec
from graphql_api.request.lifetime import Handler, RequestLifetime
from graphql_api.schema.executable import build_schema
from graphql_api.schema.query import Query
from graphql_api.settings.api import ApiSettings
from graphql_api.subscriptions.edge import RefuseRefusedSubscriptions, SubscriptionsNotServed
from graphql_api.subscriptions.hub import LiveHub
from graphql_api.subscriptions.over_http import HttpSubscriptions, wants_stream
from graphql_api.subscriptions.view import LiveSocketView

if TYPE_CHECKING:
    from graphql_api.webhooks.dispatcher import Dispatcher

log = logging.getLogger("hr.app")

# Responses at least this large are gzip-compressed for clients that accept it, at level 1:
# JSON this repetitive compresses almost as well as at Starlette's default 9 (a 150 kB
# directory answer shaped like the bench's Q1: 9.3 kB against 8.8 kB) for a quarter of the
# CPU (0.25 ms against 1 ms), and the API process's CPU is what bounds its throughput.
GZIP_MINIMUM_BYTES = 1024
GZIP_LEVEL = 1
# How long after start-up the change feed starts unless a live connection starts it sooner.
FEED_START_DELAY_SECONDS = 1.0


def graphql_endpoint(transport: HttpTransport, settings: ApiSettings) -> Handler:
    """/graphql: GraphiQL's page for a browser's visit (when it is on), GraphQL over HTTP for the rest."""

    async def respond(context: RequestContext) -> Response:
        if settings.graphiql and graphiql.wants_page(context.http):
            # Our own GraphiQL page (local assets, strict CSP), not Strawberry's CDN page.
            return graphiql.page_response(context.request.url.path, sign_in=settings.development)
        return await transport.handle(context)

    return respond


class SubscriptionOrRequest:
    """/graphql over HTTP: a request asking for a stream (a subscription's, outside the request
    deadline; anything else it hands back to the lifetime) or an ordinary request under its
    lifetime. An ASGI app, not a function, so the route passes every method on (a function
    endpoint would be GET only)."""

    def __init__(self, streams: ASGIApp, lifetime: ASGIApp) -> None:
        self.streams = streams
        self.lifetime = lifetime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (self.streams if wants_stream(scope) else self.lifetime)(scope, receive, send)


@dataclass(frozen=True, slots=True)
class LiveParts:
    """The app's schema, services, authentication and documents, for API Gateway's WebSocket
    functions, which run subscriptions without the ASGI app (graphql_api/subscriptions/gateway.py)."""

    schema: strawberry.Schema
    services: Services
    backend: BearerTokenBackend
    persisted: PersistedDocuments


def create_app(
    datastore: Datastore,
    settings: ApiSettings,
    *,
    query: type[Query] = Query,
    before_serving: Callable[[], Awaitable[None]] | None = None,
) -> Starlette:
    """The API; ``query`` is its root query type (build_schema's, for tests); ``before_serving``
    is awaited first in its lifespan (a worker's layout check, graphql_api/entrypoints/asgi.py)."""
    # Blocking work that is no DynamoDB call: a JWKS or discovery fetch, an ID token's check,
    # API Gateway's management API (request/blocking.py).
    executor = ThreadPoolExecutor(settings.io_threads, thread_name_prefix="blocking-io")
    services = Services(
        settings, datastore, executor, CursorCodec(settings.jwt_secret), tenant_buckets=tenant_buckets(settings)
    )
    # Under Lambda no process outlives its invocation to hold a reader's lease or a socket: the
    # hub serves nothing there, and API Gateway's WebSocket API does (subscriptions/gateway.py).
    live = LiveHub(services, None) if settings.lambda_function else LiveHub.for_services(services)
    # Webhooks (graphql_api/webhooks/): every process races for the dispatcher's lease; the
    # change feed's audit events wake the holder. Under Lambda AWS's functions deliver instead,
    # and a process whose datastore reads no change feed (the tools, an app embedded without
    # one) delivers nothing. Imported here: a Lambda function does not load it at its cold start.
    dispatcher: Dispatcher | None = None
    if settings.webhooks.enabled and not settings.lambda_function and datastore.feed is not None:
        from graphql_api.webhooks.dispatcher import Dispatcher

        dispatcher = Dispatcher(
            datastore, settings.webhooks, allow_private=settings.development, max_tenants=settings.metrics_max_tenants
        )
        live.listeners.append(dispatcher.on_frame)
    configure_tracing(settings.otel_endpoint, datastore.aio.observers)
    trusted = None if settings.trusted_documents is None else load_manifest(settings.trusted_documents)
    audit = None
    if settings.trusted_documents_mode == "audit":
        audit = UnlistedDocuments(max_labels=settings.metrics_max_operations, max_tokens=settings.max_tokens)
    persisted = PersistedDocuments(
        datastore, trusted, bypass_roles=settings.trusted_documents_bypass_roles, audit=audit
    )
    # Each document clients run, parsed, validated and analysed once (execution/documents.py).
    documents = Documents()
    # Limits first (they refuse before anything is loaded), then the caller's active check.
    extensions: list[Callable[[], SchemaExtension]] = [
        lambda: CachedDocuments(documents),
        OperationNameRequired,
        SubscriptionsNotServed,
        # Before the limits and the active check: it leaves the execution after them.
        lambda: StoreRegistered(persisted),
        *limit_extensions(settings),
        # Before the active check, so a read-only key's mutation costs no datastore call.
        ReadOnlyKeys,
        ActiveCaller,
    ]
    if settings.cost_in_response:
        extensions.append(lambda: Cost(settings.max_cost))
    # After every extension that may refuse in on_execute: a refused subscription never starts.
    extensions.append(RefuseRefusedSubscriptions)
    # Before the plans: an explained query runs through graphql-core, which it sets the result of.
    extensions.append(Explain)
    if settings.compiled_plans:
        # Last: every other extension's on_execute runs around the plan as around graphql-core.
        extensions.append(lambda: CompiledPlans(documents))
    schema = build_schema(
        extensions,
        batch_max_operations=settings.batch_max_operations,
        # What introspection would tell is not told by suggestions either (README "Abuse limits").
        hide_suggestions=not settings.introspection,
        query=query,
    )
    transport = HttpTransport(schema, persisted, settings.batch_max_operations)
    backend = BearerTokenBackend(
        TokenVerifier(settings),
        services.run_blocking,
        # Under Lambda a key's use is recorded before the response (nothing runs once the
        # handler has returned).
        ApiKeyAuthenticator(datastore, record_inline=settings.lambda_function is not None),
    )

    readiness = Readiness(
        probing(datastore.aio.mirror), datastore.table_name, pool=worker_pool.reader(worker_pool.my_pool())
    )

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if before_serving is not None:
            await before_serving()
        # The feed starts a second after start-up (at once for a live connection): its lease and
        # stream calls are on no request's path, the first answer's included.
        live.start_soon(FEED_START_DELAY_SECONDS)
        delivering = None if dispatcher is None else asyncio.create_task(dispatcher.run())
        yield
        if delivering is not None:
            delivering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await delivering
        await live.stop()
        executor.shutdown(wait=False, cancel_futures=True)
        await readiness.aclose()
        # The data plane's connections on this loop (datastore/aws/client.py).
        await datastore.aclose()

    lifetime = RequestLifetime(graphql_endpoint(transport, settings), services)
    app = Starlette(
        routes=[
            # Every method reaches the view, so a PUT gets the transport's JSON 405 with Allow.
            Route(
                "/graphql",
                SubscriptionOrRequest(HttpSubscriptions(schema, services, live, persisted, lifetime), lifetime),
            ),
            WebSocketRoute("/graphql", LiveSocketView(schema, services, live, backend, persisted)),
            Route("/auth/token", TokenExchange(services).endpoint, methods=["POST"]),
            Route(DISCOVERY_PATH, HomeRealmDiscovery(services).endpoint, methods=["GET"]),
            # The organisation's whole data, for its admins (graphql_api/http/export.py).
            Route("/export", ExportDownload(services).endpoint, methods=["GET"]),
            *graphiql.routes(services),
        ],
        lifespan=lifespan,
        middleware=[
            # Outermost, so every response carries X-Request-Id: health, 413s and CORS refusals too.
            Middleware(request_id.RequestIdMiddleware),
            # /healthz and /readyz never wait on authentication or any limit (nor are they logged).
            Middleware(HealthRoutes, readiness=readiness),
            # One log line and the metrics of every request, refused ones included: just inside the request id.
            Middleware(
                AccessLog,
                metrics=Metrics(
                    max_operations=settings.metrics_max_operations,
                    max_tenants=settings.metrics_max_tenants,
                    operation_min_tenants=settings.metrics_operation_min_tenants,
                    operations=settings.metrics_operations,
                    trusted_operations=None if trusted is None else operation_names(trusted.values()),
                ),
                emf=settings.lambda_function is not None,
            ),
            # ALLOWED_HOSTS (http/hosts.py): before anything that could answer or redirect; after the
            # health routes, which a load balancer probes by the target's IP address.
            Middleware(AllowedHosts, allowed_hosts=settings.hosts_to_serve()),
            # Slow clients (limits/body_timeout.py): outside the rest, so nothing inside waits on a body.
            Middleware(MaxBodyTime, timeout_seconds=settings.body_timeout_seconds),
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "X-Request-Id",
                    "apollographql-client-name",
                    "apollographql-client-version",
                ],
                expose_headers=[request_id.HEADER],
                max_age=600,
            ),
            Middleware(
                GZipMiddleware,
                minimum_size=GZIP_MINIMUM_BYTES,
                compresslevel=GZIP_LEVEL,
                # A subscription's parts must go out as they come, not when a compressed block fills.
                exclude_content_types=(*DEFAULT_EXCLUDED_CONTENT_TYPES, "multipart/mixed"),
            ),
            Middleware(MaxBodySize, max_bytes=settings.max_body_bytes),
            # In-flight cap (limits/concurrency.py): inside the body readers, so a slot is taken
            # only once the whole body has arrived.
            Middleware(MaxConcurrentRequests, max_requests=settings.max_concurrent_requests),
            # After CORS, so a 401 carries CORS headers and preflights (no token) pass.
            Middleware(AuthenticationMiddleware, backend=backend, on_error=on_auth_error),
        ],
    )
    # No redirect from /graphql/ to /graphql: it would build its Location from the Host header,
    # and an API's clients call the paths they were given; anything else is a 404.
    app.router.redirect_slashes = False
    # The process's documents and their analyses: tests read their counters.
    app.state.documents = documents
    # The process's live hub: tests read its feed's status and counters.
    app.state.live = live
    # What live updates on AWS (graphql_api/entrypoints/lambda_live.py) run subscriptions with.
    app.state.live_parts = LiveParts(schema, services, backend, persisted)
    return app
