"""Datastore settings, read once from the environment (documented in the README)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# DYNAMODB_ENDPOINT=aws: the AWS regional endpoint, found by botocore from the region.
AWS_ENDPOINT = "aws"


class ConfigError(Exception):
    """A setting is present but unusable; the message names it."""


def env_int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 1) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def env_float(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds (or other unit) from ``name``."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{name} must be a positive number, got {raw!r}")
    return value


@dataclass(frozen=True, slots=True)
class DatastoreSettings:
    table_name: str
    # None with ``embedded``: start DynamoDB Local; None otherwise: AWS's regional endpoint.
    endpoint_url: str | None
    embedded: bool
    region: str
    # botocore's "standard" retry mode; total attempts including the first.
    max_attempts: int
    # HTTP connections to DynamoDB; also the size of the thread pool that issues calls.
    pool_size: int
    local_port: int | None
    local_data_dir: Path
    local_cache_dir: Path
    # Seconds botocore waits to connect, and for each read of an answer. With two attempts
    # one call holds a thread for at most read + backoff (<= 1 s) + read, about 2 s, well
    # inside a request's deadline; DynamoDB answers in milliseconds when it is healthy.
    connect_timeout: float = 0.5
    read_timeout: float = 1.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DatastoreSettings:
        env = os.environ if env is None else env
        root = Path(__file__).resolve().parent.parent
        port = env.get("DYNAMODB_LOCAL_PORT")
        endpoint = env.get("DYNAMODB_ENDPOINT", "").strip()
        return cls(
            table_name=env.get("HR_TABLE_NAME", "hr-api"),
            endpoint_url=None if endpoint in ("", AWS_ENDPOINT) else endpoint,
            embedded=endpoint == "",
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            max_attempts=env_int(env, "DYNAMODB_MAX_ATTEMPTS", 2),
            pool_size=env_int(env, "DYNAMODB_POOL_SIZE", 64),
            local_port=None if not port else env_int(env, "DYNAMODB_LOCAL_PORT", 8001),
            local_data_dir=Path(env.get("DYNAMODB_LOCAL_DATA", root / ".data" / "dynamodb")),
            local_cache_dir=Path(env.get("DYNAMODB_LOCAL_CACHE", root / ".cache")),
            connect_timeout=env_float(env, "DYNAMODB_CONNECT_TIMEOUT_SECONDS", 0.5),
            read_timeout=env_float(env, "DYNAMODB_READ_TIMEOUT_SECONDS", 1.0),
        )
