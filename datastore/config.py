"""Datastore settings, parsed from the environment mapping graphql_api/settings/ reads (README "Configuration")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from datastore.proxy import NO_PROXIES, Proxies, Proxy, proxy_variables

# DYNAMODB_ENDPOINT=aws: the AWS regional endpoint, found by botocore from the region.
AWS_ENDPOINT = "aws"
# DYNAMODB_POOL_SIZE unset: HTTP connections to DynamoDB, per event loop.
DEFAULT_POOL_SIZE: Final = 64


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


DEFAULT_TABLE_NAME: Final = "hr-api"
# The setting that serves a table in another data layout anyway (datastore/upkeep/layout_version.py).
SERVE_UNMIGRATED_DATA: Final = "SERVE_UNMIGRATED_DATA"
# DOCUMENTS_ROLE_ARN (a role of persisted documents, before they moved into each
# organisation's partitions) is no longer read.
ROLE_SETTINGS: Final = (
    "TENANT_ROLE_ARN",
    "SIGNIN_ROLE_ARN",
    "PLATFORM_ROLE_ARN",
    "EXPORT_ROLE_ARN",
    "LIFECYCLE_ROLE_ARN",
)
# AUDIT_RETENTION_DAYS: how long an organisation's audit events are kept when it sets no
# retention of its own, and the bounds of any retention (datastore/table/retention.py).
DEFAULT_RETENTION_DAYS: Final = 2557
"""Seven years (with their leap days): HR audit trails are commonly kept six to seven years, the
limitation period for employment claims and tax records in many jurisdictions, plus margin."""
MIN_RETENTION_DAYS: Final = 90
"""An admin cannot make the trail vanish within days (evidence of what they did included)."""
MAX_RETENTION_DAYS: Final = 3653
"""Ten years: past any common HR requirement; longer is kept by exporting."""
# STS: DurationSeconds lies between 15 minutes and the role's MaxSessionDuration (at most 12 hours).
MIN_SESSION_SECONDS: Final = 900
MAX_SESSION_SECONDS: Final = 12 * 3600


@dataclass(frozen=True, slots=True)
class RoleSettings:
    """The IAM roles the server signs DynamoDB requests with, one session per scope.

    Read by ``datastore/aws/credentials.py``; the roles themselves are defined in
    ``deploy/cloudformation.py`` with the policies of ``datastore/aws/iam.py``.
    """

    tenant_role_arn: str
    signin_role_arn: str
    platform_role_arn: str
    # One organisation's export (reads only), and its restore or offboarding.
    export_role_arn: str
    lifecycle_role_arn: str
    # AssumeRole's DurationSeconds.
    session_seconds: int = 3600
    # Credentials are refreshed this long before they expire (datastore/aws/credentials.py).
    refresh_seconds: int = 300
    # Role sessions kept: one per tenant in use, plus sign-in and platform; least recent evicted.
    cache_size: int = 1000
    # None: AWS's regional STS endpoint.
    sts_endpoint_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RoleSettings | None:
        """None when no role is set: every request is signed with the process's own credentials."""
        given = {name: env.get(name, "").strip() for name in ROLE_SETTINGS}
        if not any(given.values()):
            return None
        missing = [name for name, value in given.items() if not value]
        if missing:
            unset = ", ".join(missing)
            raise ConfigError(f"per-scope credentials need all of {', '.join(ROLE_SETTINGS)}; {unset} unset")
        for name, value in given.items():
            if not (value.startswith("arn:") and ":role/" in value):
                raise ConfigError(f"{name} must be an IAM role ARN (arn:aws:iam::<account>:role/<name>), got {value!r}")
        session = env_int(env, "ROLE_SESSION_SECONDS", 3600, minimum=MIN_SESSION_SECONDS)
        if session > MAX_SESSION_SECONDS:
            raise ConfigError(f"ROLE_SESSION_SECONDS must be at most {MAX_SESSION_SECONDS}, got {session}")
        refresh = env_int(env, "ROLE_REFRESH_SECONDS", 300)
        if refresh * 2 > session:
            # Otherwise credentials would be due for refresh as soon as they arrive.
            raise ConfigError(
                f"ROLE_REFRESH_SECONDS must be at most half of ROLE_SESSION_SECONDS ({session}), got {refresh}"
            )
        return cls(
            tenant_role_arn=given["TENANT_ROLE_ARN"],
            signin_role_arn=given["SIGNIN_ROLE_ARN"],
            platform_role_arn=given["PLATFORM_ROLE_ARN"],
            export_role_arn=given["EXPORT_ROLE_ARN"],
            lifecycle_role_arn=given["LIFECYCLE_ROLE_ARN"],
            session_seconds=session,
            refresh_seconds=refresh,
            cache_size=env_int(env, "ROLE_CACHE_SIZE", 1000),
            # botocore's own name for a service's endpoint, passed on explicitly.
            sts_endpoint_url=env.get("AWS_ENDPOINT_URL_STS", "").strip() or None,
        )


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
class FeedSettings:
    """How a server's workers follow the change feed (datastore/feed/host.py)."""

    # Seconds a lease lasts unless renewed; it is renewed (and taken) every third of that.
    lease_seconds: float = 10.0
    # Seconds between two reads of a shard that came back with less than a full batch.
    poll_seconds: float = 0.25
    # Kinds of item whose records are handed to workers (None: every kind).
    kinds: frozenset[str] | None = None

    @property
    def renew_seconds(self) -> float:
        return self.lease_seconds / 3


@dataclass(frozen=True, slots=True)
class EnvironmentKey:
    """The process's AWS key as its environment gives it (``environment_key``): read without
    botocore, which costs a start about 0.3 s of CPU to import. Never shown: its repr says only
    that it is there."""

    access_key: str
    secret_key: str
    token: str | None = None

    def __repr__(self) -> str:
        return "EnvironmentKey(<hidden>)"


# botocore's environment provider's variables, in its order: the first token set wins.
ACCESS_KEY_VARIABLE: Final = "AWS_ACCESS_KEY_ID"
SECRET_KEY_VARIABLE: Final = "AWS_SECRET_ACCESS_KEY"
TOKEN_VARIABLES: Final = ("AWS_SECURITY_TOKEN", "AWS_SESSION_TOKEN")
EXPIRATION_VARIABLE: Final = "AWS_CREDENTIAL_EXPIRATION"
# A profile named in the environment makes botocore read it first (and fail when it is missing).
PROFILE_VARIABLES: Final = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")


def environment_key(env: Mapping[str, str]) -> EnvironmentKey | None:
    """The key botocore's credential chain would find first, when the environment alone gives
    it: its first provider reads these variables, and a key and secret set there win over any
    profile, container or instance role (Lambda sets them). None leaves the process's
    credentials to botocore's chain: none set (its other providers), a key without its
    secret (botocore's error), AWS_CREDENTIAL_EXPIRATION set (botocore refreshes those), or a
    profile named (AWS_PROFILE: botocore reads it, and refuses one that is not there)."""
    access_key = env.get(ACCESS_KEY_VARIABLE, "")
    secret_key = env.get(SECRET_KEY_VARIABLE, "")
    if not access_key or not secret_key or env.get(EXPIRATION_VARIABLE, ""):
        return None
    if any(env.get(name, "") for name in PROFILE_VARIABLES):
        return None
    token = next((env[name] for name in TOKEN_VARIABLES if env.get(name, "")), None)
    return EnvironmentKey(access_key, secret_key, token)


# The hosts of AWS's own endpoints (regional, FIPS, dual-stack, VPC endpoints).
AWS_DOMAINS: Final = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws")


def local_engine(endpoint_url: str | None) -> bool:
    """Whether ``endpoint_url`` is a local engine (DynamoDB Local, moto, LocalStack): plain HTTP
    to a host outside AWS's domains. Such an engine takes any key, so both planes sign for it with
    the environment's key or a placeholder, never with what botocore's credential chain finds (a
    profile's, an instance's role): the chain costs a start about 0.3 s, and the two planes then
    use one key, which an engine without ``-sharedDb`` keeps its tables under. An HTTPS endpoint
    outside AWS (a proxy in front of DynamoDB) keeps the chain."""
    if endpoint_url is None:
        return False
    parts = urlsplit(endpoint_url)
    return parts.scheme == "http" and outside_aws(parts.hostname)


def outside_aws(host: str | None) -> bool:
    """Whether ``host`` is none of AWS's endpoints."""
    return not (host or "").lower().endswith(AWS_DOMAINS)


@dataclass(frozen=True, slots=True)
class DatastoreSettings:
    table_name: str
    # None with ``embedded``: start DynamoDB Local; None otherwise: AWS's regional endpoint.
    endpoint_url: str | None
    embedded: bool
    region: str
    # botocore's "standard" retry mode; total attempts including the first.
    max_attempts: int
    # HTTP connections to DynamoDB, at most, per event loop (datastore/aws/exchange.py).
    pool_size: int
    local_port: int | None
    local_data_dir: Path
    local_cache_dir: Path
    # Per-scope credentials from STS; None signs every request with the process's own.
    roles: RoleSettings | None = None
    # Seconds one attempt waits to connect, and between two reads of its answer
    # (datastore/aws/connections.py). A silent DynamoDB holds one attempt of a call for about
    # 1.5 s, and no attempt starts that would end past a request's deadline; DynamoDB answers
    # in milliseconds when it is healthy.
    connect_timeout: float = 0.5
    read_timeout: float = 1.0
    # The change feed (datastore/feed/): how long a stream reader's lease lasts unless renewed
    # (a killed reader is replaced within it), and the pause between two reads of a quiet shard.
    feed_lease_seconds: float = 10.0
    feed_poll_seconds: float = 0.25
    # How long an organisation's audit events are kept when it sets no retention of its own
    # (datastore/table/retention.py).
    audit_retention_days: int = DEFAULT_RETENTION_DAYS
    # The proxies of HTTPS_PROXY / HTTP_PROXY / NO_PROXY (datastore/proxy.py); none by default.
    proxies: Proxies = NO_PROXIES
    # The process's key from AWS_ACCESS_KEY_ID and the rest (``environment_key``); None: the
    # process's credentials are botocore's chain's. Out of the repr: it holds a secret.
    environment_key: EnvironmentKey | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DatastoreSettings:
        root = Path(__file__).resolve().parent.parent
        port = env.get("DYNAMODB_LOCAL_PORT")
        endpoint = env.get("DYNAMODB_ENDPOINT", "").strip()
        return cls(
            table_name=env.get("HR_TABLE_NAME", DEFAULT_TABLE_NAME),
            endpoint_url=None if endpoint in ("", AWS_ENDPOINT) else endpoint,
            embedded=endpoint == "",
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            max_attempts=env_int(env, "DYNAMODB_MAX_ATTEMPTS", 2),
            pool_size=env_int(env, "DYNAMODB_POOL_SIZE", DEFAULT_POOL_SIZE),
            local_port=None if not port else env_int(env, "DYNAMODB_LOCAL_PORT", 8001),
            local_data_dir=Path(env.get("DYNAMODB_LOCAL_DATA", root / ".data" / "dynamodb")),
            local_cache_dir=Path(env.get("DYNAMODB_LOCAL_CACHE", root / ".cache")),
            roles=RoleSettings.from_env(env),
            connect_timeout=env_float(env, "DYNAMODB_CONNECT_TIMEOUT_SECONDS", 0.5),
            read_timeout=env_float(env, "DYNAMODB_READ_TIMEOUT_SECONDS", 1.0),
            feed_lease_seconds=env_float(env, "FEED_LEASE_SECONDS", 10.0),
            feed_poll_seconds=env_float(env, "FEED_POLL_SECONDS", 0.25),
            audit_retention_days=_retention_days(env),
            proxies=_proxies(env),
            environment_key=environment_key(env),
        )


def _retention_days(env: Mapping[str, str]) -> int:
    days = env_int(env, "AUDIT_RETENTION_DAYS", DEFAULT_RETENTION_DAYS, minimum=MIN_RETENTION_DAYS)
    if days > MAX_RETENTION_DAYS:
        raise ConfigError(f"AUDIT_RETENTION_DAYS must be at most {MAX_RETENTION_DAYS}, got {days}")
    return days


def _proxies(env: Mapping[str, str]) -> Proxies:
    named = proxy_variables(env)

    def parse(scheme: str) -> Proxy | None:
        url = named.get(scheme)
        if url is None:
            return None
        try:
            return Proxy.parse(url)
        except ValueError as error:  # its message never repeats the URL: it may hold a password
            raise ConfigError(f"{scheme.upper()}_PROXY {error}") from None

    return Proxies(https=parse("https"), http=parse("http"), no_proxy=named.get("no"))
