"""The boto3 clients, configured for a server: DynamoDB, its stream, and STS for per-scope credentials."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import boto3
import botocore.session
from botocore.config import Config

from datastore import attempts, fastparse, fastserialize, http_session, user_agent
from datastore.config import DatastoreSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sts import STSClient


def make_client(settings: DatastoreSettings, endpoint_url: str | None = None, *, stock: bool = False) -> DynamoDBClient:
    """A thread-safe low-level client; create one per process and share it.

    Five things make it cheaper per call than stock boto3 (``stock=True`` keeps them off,
    for the benchmark's floor): its requests travel over libcurl instead of urllib3
    (``datastore.http_session``); its item requests are encoded, and its successful item
    responses decoded, with orjson (``datastore.fastserialize``, ``datastore.fastparse``);
    botocore does not validate request parameters (``Table`` builds every request itself
    from validated input, and DynamoDB validates again; the client-side walk over 100 keys
    of a BatchGetItem costs about as much as parsing them); and its User-Agent string is
    built once per feature set, not twice per call (``datastore.user_agent``).

    Retries use botocore's "standard" mode with an explicit bound: "adaptive" mode throttles
    the whole client when one caller is throttled, which in a multi-tenant server lets one
    tenant's hot partition slow every other tenant down. Short timeouts and two attempts
    bound one call to about 4 s (datastore/config.py), so a DynamoDB that swallows requests
    costs a request its deadline, never the thread pool.
    """
    config = Config(
        # "total_max_attempts" counts the first try; botocore's "max_attempts" counts retries only.
        retries={"mode": "standard", "total_max_attempts": settings.max_attempts},
        max_pool_connections=settings.pool_size,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        tcp_keepalive=True,
        parameter_validation=stock,
    )
    client: DynamoDBClient = local_client("dynamodb", settings.region, endpoint_url or settings.endpoint_url, config)
    if stock:
        return client
    # Which attempts of a call may have reached DynamoDB: Table's writes report it (datastore/attempts.py).
    attempts.install(client)
    http_session.install(
        client,
        verify=ca_bundle() or True,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
    )
    return user_agent.memoize(fastparse.install(fastserialize.install(client)))


def ca_bundle() -> str | None:
    """What botocore itself verifies TLS with: AWS_CA_BUNDLE or ca_bundle in the AWS config
    (None: its default bundle). Both DynamoDB clients verify with it."""
    bundle: str | None = botocore.session.get_session().get_config_variable("ca_bundle")
    return bundle


def make_sts_client(settings: DatastoreSettings) -> STSClient:
    """The STS client that assumes the data roles (datastore/credentials.py).

    It signs with the process's own credentials (in AWS, the service role, which may do
    nothing but assume the data roles and describe the table).
    """
    roles = settings.roles
    endpoint = None if roles is None else roles.sts_endpoint_url
    # Its own bounds, not DYNAMODB_*: an AssumeRole is rare (once per tenant per session), and
    # every request of that tenant waits for it anyway.
    config = Config(retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=2, read_timeout=5)
    sts: STSClient = local_client("sts", settings.region, endpoint, config)
    return sts


def make_streams_client(settings: DatastoreSettings, endpoint_url: str | None = None) -> Any:
    """The DynamoDB Streams client the change feed reads with (datastore/feed/reader.py).

    The process's own credentials sign it (stream reads name no item, so no data role bounds
    them). One reader per server instance polls it, so it needs few connections; its timeouts
    are DynamoDB's.
    """
    config = Config(
        retries={"mode": "standard", "total_max_attempts": settings.max_attempts},
        max_pool_connections=4,
        connect_timeout=settings.connect_timeout,
        read_timeout=max(settings.read_timeout, 5.0),
        tcp_keepalive=True,
    )
    return local_client("dynamodbstreams", settings.region, endpoint_url or settings.endpoint_url, config)


def local_client(
    service: Literal["dynamodb", "dynamodbstreams", "sts"], region: str, endpoint: str | None, config: Config
) -> Any:
    """A client of ``service``; at a local endpoint (DynamoDB Local, moto) it has placeholder credentials.

    Local engines accept any credentials, but botocore refuses to sign without some.
    """
    session = boto3.session.Session()
    placeholder = "local" if endpoint is not None and session.get_credentials() is None else None
    return session.client(
        service,
        region_name=region,
        endpoint_url=endpoint,
        config=config,
        aws_access_key_id=placeholder,
        aws_secret_access_key=placeholder,
    )
