"""API settings, read once from the environment at start-up (documented in the README)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from datastore.config import ConfigError, env_int

# Printed at start-up in development; refused anywhere else.
DEVELOPMENT_SECRET: Final = "dev-only-secret-change-me-0123456789abcdef"


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


@dataclass(frozen=True, slots=True)
class ApiSettings:
    environment: str
    jwt_secret: str
    jwt_issuer: str | None
    jwt_audience: str | None
    token_ttl_seconds: int
    # Threads that run blocking DynamoDB calls; matches the HTTP connection pool.
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
    max_body_bytes: int = 15 * 1024
    max_dynamodb_calls: int = 2000
    # Operations in one batched (JSON array) request; 0 refuses batches.
    batch_max_operations: int = 0
    # Origins allowed to call from a browser; none by default.
    cors_origins: tuple[str, ...] = ()
    # A JSON manifest {id: document}: when set, only its documents run (graphql_api/http/persisted.py).
    trusted_documents: str | None = None

    @property
    def development(self) -> bool:
        return self.environment == "development"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ApiSettings:
        env = os.environ if env is None else env
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
            io_threads=env_int(env, "DYNAMODB_POOL_SIZE", 64),
            graphiql=env_bool(env, "GRAPHIQL", development),
            introspection=env_bool(env, "INTROSPECTION", development),
            cost_in_response=env_bool(env, "COST_IN_RESPONSE", True),
            jwks=env.get("JWKS") or None,
            max_depth=env_int(env, "MAX_QUERY_DEPTH", 6),
            max_aliases=env_int(env, "MAX_ALIASES", 15, minimum=0),
            max_tokens=env_int(env, "MAX_TOKENS", 1000),
            max_cost=env_int(env, "MAX_QUERY_COST", 5000),
            max_body_bytes=env_int(env, "MAX_BODY_BYTES", 15 * 1024),
            max_dynamodb_calls=env_int(env, "MAX_DYNAMODB_CALLS", 2000),
            batch_max_operations=env_int(env, "BATCH_MAX_OPERATIONS", 0, minimum=0),
            cors_origins=tuple(origin.strip() for origin in env.get("CORS_ORIGINS", "").split(",") if origin.strip()),
            trusted_documents=env.get("TRUSTED_DOCUMENTS") or None,
        )

    def warn_if_development(self) -> None:
        if self.jwt_secret == DEVELOPMENT_SECRET:
            print(
                "warning: signing tokens with the built-in development JWT secret; "
                "set JWT_SECRET (32+ characters) and HR_ENV=production outside development",
                file=sys.stderr,
                flush=True,
            )
