"""The boto3 DynamoDB client, configured for a server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from datastore.config import DatastoreSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def make_client(settings: DatastoreSettings, endpoint_url: str | None = None) -> DynamoDBClient:
    """A thread-safe low-level client; create one per process and share it.

    Retries use botocore's "standard" mode with an explicit bound: "adaptive" mode throttles
    the whole client when one caller is throttled, which in a multi-tenant server lets one
    tenant's hot partition slow every other tenant down. Short timeouts and two attempts
    bound one call to about 2 s (datastore/config.py), so a DynamoDB that swallows requests
    costs a request its deadline, never the thread pool.
    """
    config = Config(
        retries={"mode": "standard", "max_attempts": settings.max_attempts},
        max_pool_connections=settings.pool_size,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        tcp_keepalive=True,
    )
    endpoint = endpoint_url or settings.endpoint_url
    session = boto3.session.Session()
    # DynamoDB Local accepts any credentials but botocore refuses to sign without some.
    placeholder = "local" if endpoint is not None and session.get_credentials() is None else None
    return session.client(
        "dynamodb",
        region_name=settings.region,
        endpoint_url=endpoint,
        config=config,
        aws_access_key_id=placeholder,
        aws_secret_access_key=placeholder,
    )
