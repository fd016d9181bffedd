"""API settings, parsed from the environment mapping graphql_api/settings/__init__.py reads (README "Configuration")."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal
from urllib.parse import urlsplit

from datastore.config import ConfigError, env_float, env_int
from graphql_api.log_output import LOG_FORMATS, LogFormat
from graphql_api.settings.webhooks import WebhookSettings

# Printed at start-up in development; refused anywhere else.
DEVELOPMENT_SECRET: Final = "dev-only-secret-change-me-0123456789abcdef"
# The repository's git-ignored download cache, shared with DynamoDB Local's (datastore/config.py):
# npm packages fetched once at setup (GraphiQL's browser bundles) live here.
DEFAULT_CACHE_DIR: Final = Path(__file__).resolve().parents[2] / ".cache"
# Threads for blocking work that is no DynamoDB call (request/blocking.py). They were sized by
# DynamoDB's connections (DYNAMODB_POOL_SIZE) while they ran its calls; their jobs now are few
# and short, and a thread each would be idle memory.
DEFAULT_IO_THREADS: Final = 16


def env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


HttpImplementation = Literal["httptools", "h11"]
HTTP_IMPLEMENTATIONS: Final[tuple[HttpImplementation, ...]] = ("httptools", "h11")


def http_implementation(env: Mapping[str, str]) -> HttpImplementation:
    """HTTP_IMPLEMENTATION: httptools on uvloop (the default), or h11 on asyncio's own loop."""
    raw = env.get("HTTP_IMPLEMENTATION", "").strip().lower() or "httptools"
    for choice in HTTP_IMPLEMENTATIONS:
        if raw == choice:
            return choice
    raise ConfigError(f"HTTP_IMPLEMENTATION must be one of {', '.join(HTTP_IMPLEMENTATIONS)}, got {raw!r}")


def log_format(env: Mapping[str, str], development: bool) -> LogFormat:
    """LOG_FORMAT: text by default in development, where a person reads it; JSON elsewhere."""
    raw = env.get("LOG_FORMAT", "").strip().lower() or ("text" if development else "json")
    if raw == "json":
        return "json"
    if raw == "text":
        return "text"
    raise ConfigError(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {raw!r}")


LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")
# ALLOWED_HOSTS in development: the loopback's names, as a Host header spells them.
DEVELOPMENT_HOSTS: Final = ("localhost", "127.0.0.1", "[::1]")


def allowed_hosts(env: Mapping[str, str], development: bool) -> tuple[str, ...] | None:
    """ALLOWED_HOSTS: the host names requests may be addressed to (graphql_api/http/hosts.py).

    The loopback's names by default in development; None (unset) anywhere else, which a server
    refuses to start with (``ApiSettings.hosts_to_serve``), since only the operator knows the
    names a deployment answers to. ``*`` admits any, for a proxy that checks the host itself.
    """
    hosts = tuple(host.strip().lower() for host in env.get("ALLOWED_HOSTS", "").split(",") if host.strip())
    for host in hosts:
        if "*" in host[1:] or (host.startswith("*") and host != "*" and not host.startswith("*.")):
            raise ConfigError(f"ALLOWED_HOSTS: a wildcard must be *.domain or *, got {host!r}")
    if hosts:
        return hosts
    return DEVELOPMENT_HOSTS if development else None


@dataclass(frozen=True, slots=True)
class OidcSettings:
    """The identity provider for sign-in: its issuer, our client ids at it, its signing keys."""

    issuer: str
    # The client ids an ID token may be addressed to (its ``aud``); at least one.
    audiences: tuple[str, ...]
    # An https:// URL or a file path (http:// only on the loopback, for tests and local IdPs).
    jwks: str

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OidcSettings | None:
        names = ("OIDC_ISSUER", "OIDC_AUDIENCE", "OIDC_JWKS")
        given = {name: env.get(name, "").strip() for name in names}
        if not any(given.values()):
            return None
        missing = [name for name, value in given.items() if not value]
        if missing:
            unset = ", ".join(missing)
            raise ConfigError(f"sign-in by SSO needs OIDC_ISSUER, OIDC_AUDIENCE and OIDC_JWKS; {unset} unset")
        audiences = tuple(a.strip() for a in given["OIDC_AUDIENCE"].split(",") if a.strip())
        if not audiences:
            raise ConfigError("OIDC_AUDIENCE must name at least one client id")
        jwks = given["OIDC_JWKS"]
        if "://" in jwks:
            url = urlsplit(jwks)
            if url.scheme != "https" and not (url.scheme == "http" and url.hostname in LOOPBACK_HOSTS):
                raise ConfigError(f"OIDC_JWKS must be an https:// URL or a file path, got {jwks!r}")
        return cls(issuer=given["OIDC_ISSUER"], audiences=audiences, jwks=jwks)


TrustedMode = Literal["enforce", "audit"]
TRUSTED_MODES: Final[tuple[TrustedMode, ...]] = ("enforce", "audit")
# Who may run documents outside the manifest (GraphiQL, introspection): platform operators and
# the employee roles. API keys never: they are integrations, not people with developer tools.
BYPASS_ROLES: Final = ("platform", "admin", "manager", "employee")


def trusted_mode(env: Mapping[str, str]) -> TrustedMode:
    """TRUSTED_DOCUMENTS_MODE: enforce (the default) refuses unlisted documents, audit runs and
    logs them; either only with a manifest (graphql_api/http/persisted.py)."""
    raw = env.get("TRUSTED_DOCUMENTS_MODE", "").strip().lower()
    if raw and not env.get("TRUSTED_DOCUMENTS"):
        raise ConfigError("TRUSTED_DOCUMENTS_MODE needs TRUSTED_DOCUMENTS, the manifest it applies to")
    for choice in TRUSTED_MODES:
        if (raw or "enforce") == choice:
            return choice
    raise ConfigError(f"TRUSTED_DOCUMENTS_MODE must be one of {', '.join(TRUSTED_MODES)}, got {raw!r}")


def bypass_roles(env: Mapping[str, str]) -> tuple[str, ...]:
    """TRUSTED_DOCUMENTS_BYPASS_ROLES: the roles whose tokens run any document under
    TRUSTED_DOCUMENTS (platform by default; ``none`` for nobody)."""
    raw = env.get("TRUSTED_DOCUMENTS_BYPASS_ROLES", "").strip().lower()
    if not raw:
        return ("platform",)
    if raw == "none":
        return ()
    roles = tuple(role.strip() for role in raw.split(",") if role.strip())
    unknown = [role for role in roles if role not in BYPASS_ROLES]
    if unknown:
        raise ConfigError(
            f"TRUSTED_DOCUMENTS_BYPASS_ROLES: {', '.join(unknown)} is no role; use {', '.join(BYPASS_ROLES)} or none"
        )
    return roles


def tenant_cost_burst(env: Mapping[str, str]) -> int:
    """TENANT_COST_BURST, at least MAX_QUERY_COST: a smaller bucket could never admit an admitted query."""
    burst = env_int(env, "TENANT_COST_BURST", 60_000)
    max_cost = env_int(env, "MAX_QUERY_COST", 5000)
    if env_int(env, "TENANT_COST_PER_SECOND", 30_000, minimum=0) > 0 and burst < max_cost:
        raise ConfigError(f"TENANT_COST_BURST ({burst}) must be at least MAX_QUERY_COST ({max_cost})")
    return burst


@dataclass(frozen=True, slots=True)
class ApiSettings:
    environment: str
    jwt_secret: str
    jwt_issuer: str | None
    jwt_audience: str | None
    token_ttl_seconds: int
    # Threads that run blocking work that is no DynamoDB call (request/blocking.py): JWKS and
    # discovery fetches, ID token checks, API Gateway's management API (IO_THREADS).
    io_threads: int
    graphiql: bool
    introspection: bool
    cost_in_response: bool
    # Asymmetric tokens (RS256/ES256): a JWKS file path or https URL; None accepts HS256 only.
    jwks: str | None = None
    # Abuse limits (README "Abuse limits"); graphql-armor's defaults where it has one.
    max_depth: int = 6
    max_aliases: int = 15
    max_tokens: int = 1000
    max_cost: int = 5000
    max_body_bytes: int = 32 * 1024
    max_dynamodb_calls: int = 2000
    # Operations in one batched (JSON array) request; 0 refuses batches.
    batch_max_operations: int = 0
    # Origins allowed to call from a browser; none by default.
    cors_origins: tuple[str, ...] = ()
    # Sign-in by SSO (POST /auth/token): the identity provider whose ID tokens are exchanged.
    # None when OIDC_ISSUER, OIDC_AUDIENCE and OIDC_JWKS are unset (the endpoint says so).
    oidc: OidcSettings | None = None
    # Lifetime of the access tokens /auth/token issues.
    access_token_ttl_seconds: int = 900
    # Sessions (refresh tokens, datastore/signin/sessions.py): over after this long without a
    # refresh, and after this long whatever happens.
    session_idle_seconds: int = 24 * 3600
    session_max_seconds: int = 7 * 24 * 3600
    # How long after a rotation the replaced refresh token still answers its successor
    # (datastore/signin/sessions.py, "Reuse leeway"); 0: never, a second use ends the session.
    refresh_reuse_leeway_seconds: int = 30
    # Work one request may cause, and slow clients (README "Abuse limits").
    max_response_bytes: int = 4 * 1024 * 1024
    max_concurrent_requests: int = 64
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 10.0
    # How uvicorn parses HTTP and which loop it runs (graphql_api/entrypoints/serving.py).
    http_implementation: HttpImplementation = "httptools"
    # A request head's bytes (request line and header fields) and its header fields (limits/head_size.py).
    max_head_bytes: int = 32 * 1024
    max_headers: int = 100
    # Host names requests may be addressed to (graphql_api/http/hosts.py); ``*`` admits any;
    # None (unset outside development) lets tools run but no server start.
    allowed_hosts: tuple[str, ...] | None = DEVELOPMENT_HOSTS
    # Fair tenants (README "Fair tenants"): cost units per second and burst per organisation,
    # per process; 0 per second switches the limit off.
    tenant_cost_per_second: int = 30_000
    tenant_cost_burst: int = 60_000
    # Where GraphiQL's pinned npm packages are unpacked (README "GraphiQL").
    graphiql_cache_dir: Path = DEFAULT_CACHE_DIR
    # A JSON manifest {id: document}: when set, only its documents run (graphql_api/http/persisted.py),
    # but for the roles that bypass it; in audit mode the others run too, logged and counted.
    trusted_documents: str | None = None
    trusted_documents_mode: TrustedMode = "enforce"
    trusted_documents_bypass_roles: tuple[str, ...] = ("platform",)
    # Observability (README "Operating it"): log lines as JSON or text; /metrics on its own
    # port (None: not served); bounds on the label values a process admits.
    log_format: LogFormat = "text"
    metrics_port: int | None = None
    metrics_max_operations: int = 50
    metrics_max_tenants: int = 100
    # Operation names always labelled, and how many organisations must run a name before a
    # process labels it too (observability/labels.py; TRUSTED_DOCUMENTS replaces both).
    metrics_operations: tuple[str, ...] = ()
    metrics_operation_min_tenants: int = 2
    # Set in each worker by `server.py run` (WORKERS>1): prometheus-client's multiprocess
    # directory, where the worker also writes its process metrics (observability/process.py).
    metrics_multiprocess_dir: str | None = None
    # Set by AWS Lambda in the function's environment: metrics go out as CloudWatch EMF.
    lambda_function: str | None = None
    # OpenTelemetry (optional extra `otel`): export spans over OTLP/HTTP to this URL.
    otel_endpoint: str | None = None
    # Every GraphQL request ends by then, answered TIMEOUT if need be (graphql_api/request/lifetime.py).
    request_timeout_seconds: float = 10.0
    # Queries run by compiled execution plans (graphql_api/execution/plan/); false runs all on graphql-core.
    compiled_plans: bool = True
    # Live updates (README "Live updates", graphql_api/subscriptions/): per process, connections in
    # all and per organisation; subscriptions on one connection; events waiting for a connection
    # before it is closed as slow; its longest life; the keep-alive ping's period; how long a
    # WebSocket may take to send connection_init.
    subscription_connections: int = 10_000
    subscription_connections_per_tenant: int = 1_000
    subscriptions_per_connection: int = 20
    subscription_queue_events: int = 100
    subscription_lifetime_seconds: float = 7200.0
    subscription_keepalive_seconds: float = 15.0
    subscription_init_timeout_seconds: float = 10.0
    # How long a write's audit id may precede its commit (cursors.py), and how far back a
    # resumed subscription may replay: events and seconds.
    subscription_reorder_window_seconds: float = 10.0
    subscription_replay_events: int = 1_000
    subscription_replay_seconds: float = 86_400.0
    # Days between closing an organisation and deleting its data (datastore/lifecycle/offboarding.py).
    offboarding_grace_days: int = 30
    # Webhooks: the retry schedule and every bound (graphql_api/settings/webhooks.py, WEBHOOK_*).
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)

    @property
    def development(self) -> bool:
        return self.environment == "development"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ApiSettings:
        environment = env.get("HR_ENV", "development")
        secret = env.get("JWT_SECRET") or DEVELOPMENT_SECRET
        if environment != "development" and secret == DEVELOPMENT_SECRET:
            raise ConfigError("JWT_SECRET must be set outside development (HR_ENV=development)")
        if len(secret) < 32:
            raise ConfigError("JWT_SECRET must be at least 32 characters")
        development = environment == "development"
        return cls(
            environment=environment,
            jwt_secret=secret,
            jwt_issuer=env.get("JWT_ISSUER") or None,
            jwt_audience=env.get("JWT_AUDIENCE") or None,
            token_ttl_seconds=env_int(env, "TOKEN_TTL_SECONDS", 12 * 3600),
            io_threads=env_int(env, "IO_THREADS", DEFAULT_IO_THREADS),
            graphiql=env_bool(env, "GRAPHIQL", development),
            introspection=env_bool(env, "INTROSPECTION", development),
            cost_in_response=env_bool(env, "COST_IN_RESPONSE", True),
            jwks=env.get("JWKS") or None,
            max_depth=env_int(env, "MAX_QUERY_DEPTH", 6),
            max_aliases=env_int(env, "MAX_ALIASES", 15, minimum=0),
            max_tokens=env_int(env, "MAX_TOKENS", 1000),
            max_cost=env_int(env, "MAX_QUERY_COST", 5000),
            max_body_bytes=env_int(env, "MAX_BODY_BYTES", 32 * 1024),
            max_dynamodb_calls=env_int(env, "MAX_DYNAMODB_CALLS", 2000),
            batch_max_operations=env_int(env, "BATCH_MAX_OPERATIONS", 0, minimum=0),
            cors_origins=tuple(origin.strip() for origin in env.get("CORS_ORIGINS", "").split(",") if origin.strip()),
            oidc=OidcSettings.from_env(env),
            access_token_ttl_seconds=env_int(env, "ACCESS_TOKEN_TTL_SECONDS", 900),
            session_idle_seconds=env_int(env, "SESSION_IDLE_SECONDS", 24 * 3600),
            session_max_seconds=env_int(env, "SESSION_MAX_SECONDS", 7 * 24 * 3600),
            refresh_reuse_leeway_seconds=env_int(env, "REFRESH_REUSE_LEEWAY_SECONDS", 30, minimum=0),
            max_response_bytes=env_int(env, "MAX_RESPONSE_BYTES", 4 * 1024 * 1024),
            max_concurrent_requests=env_int(env, "MAX_CONCURRENT_REQUESTS", 64),
            header_timeout_seconds=env_int(env, "HEADER_TIMEOUT_SECONDS", 10),
            body_timeout_seconds=env_int(env, "BODY_TIMEOUT_SECONDS", 10),
            http_implementation=http_implementation(env),
            # Minimums a browser's ordinary head (cookies, a bearer token) always fits in.
            max_head_bytes=env_int(env, "MAX_HEAD_BYTES", 32 * 1024, minimum=4096),
            max_headers=env_int(env, "MAX_HEADERS", 100, minimum=10),
            allowed_hosts=allowed_hosts(env, development),
            tenant_cost_per_second=env_int(env, "TENANT_COST_PER_SECOND", 30_000, minimum=0),
            tenant_cost_burst=tenant_cost_burst(env),
            graphiql_cache_dir=Path(env.get("GRAPHIQL_CACHE") or DEFAULT_CACHE_DIR),
            trusted_documents=env.get("TRUSTED_DOCUMENTS") or None,
            trusted_documents_mode=trusted_mode(env),
            trusted_documents_bypass_roles=bypass_roles(env),
            log_format=log_format(env, development),
            metrics_port=env_int(env, "METRICS_PORT", 0, minimum=0) or None,
            metrics_max_operations=env_int(env, "METRICS_MAX_OPERATIONS", 50, minimum=0),
            metrics_max_tenants=env_int(env, "METRICS_MAX_TENANTS", 100, minimum=0),
            metrics_operations=tuple(
                name.strip() for name in env.get("METRICS_OPERATIONS", "").split(",") if name.strip()
            ),
            metrics_operation_min_tenants=env_int(env, "METRICS_OPERATION_MIN_TENANTS", 2, minimum=1),
            metrics_multiprocess_dir=env.get("PROMETHEUS_MULTIPROC_DIR") or None,
            lambda_function=env.get("AWS_LAMBDA_FUNCTION_NAME") or None,
            otel_endpoint=env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None,
            request_timeout_seconds=env_float(env, "REQUEST_TIMEOUT_SECONDS", 10.0),
            compiled_plans=env_bool(env, "COMPILED_PLANS", True),
            subscription_connections=env_int(env, "SUBSCRIPTION_CONNECTIONS", 10_000, minimum=0),
            subscription_connections_per_tenant=env_int(env, "SUBSCRIPTION_CONNECTIONS_PER_TENANT", 1_000, minimum=0),
            subscriptions_per_connection=env_int(env, "SUBSCRIPTIONS_PER_CONNECTION", 20),
            subscription_queue_events=env_int(env, "SUBSCRIPTION_QUEUE_EVENTS", 100),
            subscription_lifetime_seconds=env_float(env, "SUBSCRIPTION_LIFETIME_SECONDS", 7200.0),
            subscription_keepalive_seconds=env_float(env, "SUBSCRIPTION_KEEPALIVE_SECONDS", 15.0),
            subscription_init_timeout_seconds=env_float(env, "SUBSCRIPTION_INIT_TIMEOUT_SECONDS", 10.0),
            subscription_reorder_window_seconds=env_float(env, "SUBSCRIPTION_REORDER_WINDOW_SECONDS", 10.0),
            subscription_replay_events=env_int(env, "SUBSCRIPTION_REPLAY_EVENTS", 1_000),
            subscription_replay_seconds=env_float(env, "SUBSCRIPTION_REPLAY_SECONDS", 86_400.0),
            offboarding_grace_days=env_int(env, "OFFBOARDING_GRACE_DAYS", 30, minimum=0),
            webhooks=WebhookSettings.from_env(env),
        )

    def hosts_to_serve(self) -> tuple[str, ...]:
        """ALLOWED_HOSTS, which every server needs outside development (a tool such as
        ``server.py token`` does not, so parsing the settings does not insist)."""
        if self.allowed_hosts is None:
            raise ConfigError(
                "ALLOWED_HOSTS must be set outside development: the host names clients use, comma-separated "
                "(*.example.com for subdomains, * for any host when a proxy in front checks it)"
            )
        return self.allowed_hosts

    def warn_if_development(self, warn: Callable[[str], None] | None = None) -> None:
        """Warn on stderr, or through ``warn`` (``server.py run``'s log under LOG_FORMAT=json)."""
        if self.jwt_secret == DEVELOPMENT_SECRET:
            text = (
                "warning: signing tokens with the built-in development JWT secret; "
                "set JWT_SECRET (32+ characters) and HR_ENV=production outside development"
            )
            if warn is None:
                print(text, file=sys.stderr, flush=True)
            else:
                warn(text)
