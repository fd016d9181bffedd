"""All configuration, read once: the only module that reads the process environment.

``Settings.load()`` reads ``os.environ`` into one typed, frozen object; everything else is
given its part (``settings.datastore``, ``settings.api``, ``settings.server``) and never looks
at the environment itself (tests/graphql_api/settings/test_settings.py greps the source to keep it so). Each part's
``from_env(env)`` parses an explicit mapping and knows nothing of ``os.environ``, so tests build
settings from dicts.

Worker processes (``server.py run`` with ``WORKERS=N``, ``uvicorn graphql_api.entrypoints.asgi:app``) are
fresh interpreters that call ``Settings.load()`` again on the environment they inherit; what
the parent decides at run time (the embedded engine's endpoint, the metrics directory) reaches
them through ``hand_down_to_workers``, and a child process the bench starts gets
``child_environment``. To add a setting: a field with its default on the part it belongs to,
parsed in that part's ``from_env`` with ``env_int``/``env_bool``/``env.get``, and a README
"Configuration" row.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from datastore.config import SERVE_UNMIGRATED_DATA, ConfigError, DatastoreSettings, env_int
from graphql_api.settings.api import ApiSettings, env_bool
from graphql_api.settings.secrets import fetch_secret

__all__ = ["ConfigError", "ServerSettings", "Settings", "child_environment", "hand_down_to_workers"]

# The environment variable prometheus-client reads (in each worker, at import) for its
# multiprocess mode's directory: the one setting we hand down that is not ours.
PROMETHEUS_MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How ``server.py run`` serves: where it listens, how many workers, how it stops."""

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    # How long SIGTERM waits for in-flight requests.
    shutdown_grace_seconds: int = 10
    # Load the demo data into an empty table on a configured endpoint (always when embedded).
    demo_data: bool = False
    # Serve a table whose data is in another layout than this release's, with a warning,
    # instead of refusing to start (datastore/upkeep/layout_version.py).
    serve_unmigrated: bool = False
    # Tests only: the partition after which ``server.py restore`` stops and waits to be killed,
    # so a test interrupts it at a known point (ignored in production).
    restore_pause_after: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ServerSettings:
        return cls(
            host=env.get("HOST") or "127.0.0.1",
            port=env_int(env, "PORT", 8000),
            workers=env_int(env, "WORKERS", 1),
            shutdown_grace_seconds=env_int(env, "SHUTDOWN_GRACE_SECONDS", 10, minimum=0),
            demo_data=env_bool(env, "HR_DEMO_DATA", False),
            serve_unmigrated=env_bool(env, SERVE_UNMIGRATED_DATA, False),
            restore_pause_after=env.get("HR_TEST_RESTORE_PAUSE_AFTER") or None,
        )


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting of the process, grouped by the part of the code that uses it."""

    datastore: DatastoreSettings
    api: ApiSettings
    server: ServerSettings

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Parse ``env``; a value that does not parse raises ConfigError naming its variable."""
        return cls(
            datastore=DatastoreSettings.from_env(env),
            api=ApiSettings.from_env(env),
            server=ServerSettings.from_env(env),
        )

    @classmethod
    def load(cls, overrides: Mapping[str, str] | None = None, *, defaults: Mapping[str, str] | None = None) -> Settings:
        """The process's settings: its environment over ``defaults``, with ``overrides`` on top.

        With JWT_SECRET_ARN the token secret is read from Secrets Manager here, once
        (graphql_api/settings/secrets.py), and never put in the environment.
        """
        return cls.from_env(with_secrets({**(defaults or {}), **os.environ, **(overrides or {})}))


def with_secrets(env: dict[str, str]) -> dict[str, str]:
    """``env`` with JWT_SECRET read from the secret JWT_SECRET_ARN names, when it names one."""
    arn = env.get("JWT_SECRET_ARN", "").strip()
    if not arn:
        return env
    if env.get("JWT_SECRET"):
        raise ConfigError("set JWT_SECRET or JWT_SECRET_ARN, not both")
    return {**env, "JWT_SECRET": fetch_secret(arn)}


def hand_down_to_workers(
    *, dynamodb_endpoint: str | None, metrics_dir: str | None, defaults: Mapping[str, str] | None = None
) -> None:
    """Make worker processes spawned after this call load what this process decided.

    uvicorn spawns workers that import ``graphql_api.entrypoints.asgi`` afresh, so the environment they
    inherit is the only channel: the embedded engine's endpoint (they must never start their
    own) and prometheus-client's multiprocess directory.
    """
    if dynamodb_endpoint is not None:
        os.environ["DYNAMODB_ENDPOINT"] = dynamodb_endpoint
    if metrics_dir is not None:
        os.environ[PROMETHEUS_MULTIPROC_DIR] = metrics_dir
    for name, value in (defaults or {}).items():
        os.environ.setdefault(name, value)  # defaults only: what the environment says wins


def process_environment() -> dict[str, str]:
    """This process's environment, for an entry point that parses only its own part of the
    settings (the webhooks' Lambda functions serve no API, so they have no JWT secret to load)."""
    return dict(os.environ)


def child_environment(overrides: Mapping[str, str]) -> dict[str, str]:
    """The environment for a child process that loads its own settings: ours, with overrides."""
    return {**os.environ, **overrides}
