"""The boto3 clients of the control plane, configured for a server: DynamoDB's (creating,
describing and updating the table), its stream's, and STS for per-scope credentials.

The data plane (every item read and write) does not come here: it runs on the event loop
(``datastore/aws/client.py``). boto3 is imported by the functions that make a client, so a
process that needs none does not import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from datastore.config import DatastoreSettings, EnvironmentKey, local_engine

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sts import STSClient


def make_client(settings: DatastoreSettings, endpoint_url: str | None = None) -> DynamoDBClient:
    """A thread-safe low-level client of the control plane; one per process is plenty.

    Retries use botocore's "standard" mode with an explicit bound: "adaptive" mode throttles
    the whole client when one caller is throttled. Short timeouts bound one call, as the
    data plane's (datastore/config.py).
    """
    config = _table_service_config(settings)
    client: DynamoDBClient = local_client(
        "dynamodb", settings.region, endpoint_url or settings.endpoint_url, config, settings.environment_key
    )
    return client


def _table_service_config(settings: DatastoreSettings) -> Config:
    """The control plane's and the stream's clients' bounds: DynamoDB's attempts and connect
    timeout, a read timeout of at least 5 s (a CreateTable or a GetRecords may take that), few
    connections (one caller at a time each)."""
    from botocore.config import Config

    return Config(
        # "total_max_attempts" counts the first try; botocore's "max_attempts" counts retries only.
        retries={"mode": "standard", "total_max_attempts": settings.max_attempts},
        max_pool_connections=4,
        connect_timeout=settings.connect_timeout,
        read_timeout=max(settings.read_timeout, 5.0),
        tcp_keepalive=True,
    )


def make_sts_client(settings: DatastoreSettings) -> STSClient:
    """The STS client that assumes the data roles (datastore/aws/credentials.py).

    It signs with the process's own credentials (in AWS, the service role, which may do
    nothing but assume the data roles and describe the table).
    """
    roles = settings.roles
    endpoint = None if roles is None else roles.sts_endpoint_url
    # Its own bounds, not DYNAMODB_*: an AssumeRole is rare (once per tenant per session), and
    # every request of that tenant waits for it anyway.
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=2, read_timeout=5)
    sts: STSClient = local_client("sts", settings.region, endpoint, config, settings.environment_key)
    return sts


def make_streams_client(settings: DatastoreSettings, endpoint_url: str | None = None) -> Any:
    """The DynamoDB Streams client the change feed reads with (datastore/feed/reader.py).

    The process's own credentials sign it (stream reads name no item, so no data role bounds
    them). One reader per server instance polls it, so it needs few connections; its timeouts
    are DynamoDB's.
    """
    config = _table_service_config(settings)
    endpoint = endpoint_url or settings.endpoint_url
    return local_client("dynamodbstreams", settings.region, endpoint, config, settings.environment_key)


def local_client(
    service: Literal["dynamodb", "dynamodbstreams", "sts"],
    region: str,
    endpoint: str | None,
    config: Config,
    key: EnvironmentKey | None,
) -> Any:
    """A client of ``service``. A local engine (``datastore.config.local_engine``) is signed
    with ``key``, the environment's, else a placeholder, as the data plane signs it; elsewhere
    botocore's chain finds the credentials, and a local endpoint over HTTPS with none gets the
    placeholder too.

    Local engines accept any credentials, but botocore refuses to sign without some.
    """
    import boto3

    if local_engine(endpoint):
        session = boto3.session.Session(
            aws_access_key_id=key.access_key if key else "local",
            aws_secret_access_key=key.secret_key if key else "local",
            aws_session_token=key.token if key else None,
        )
    else:
        session = boto3.session.Session()
        if endpoint is not None and session.get_credentials() is None:
            session = boto3.session.Session(aws_access_key_id="local", aws_secret_access_key="local")
    return session.client(service, region_name=region, endpoint_url=endpoint, config=config)
