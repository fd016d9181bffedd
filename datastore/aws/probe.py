"""Is DynamoDB there? Checks for readiness and start-up, on a client of their own.

The probe client has short timeouts, one attempt and a small pool of its own, so a check is
never queued behind request traffic and never waits out the request client's retries: the
commands' (boto3, blocking) and the API's readiness (``probing``, awaited on the event loop).
botocore's configuration and errors are imported by the commands' functions, which alone use them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from datastore.aws.client import AsyncDynamo, Mirror, send
from datastore.aws.control_plane import local_client
from datastore.errors import DatastoreError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def probe_client(like: DynamoDBClient) -> DynamoDBClient:
    """A client for the endpoint and region of ``like``, configured for probing: one attempt
    of at most 0.5 s to connect and 0.5 s to read, so a check ends within about 1 s."""
    from botocore.config import Config

    config = Config(
        connect_timeout=0.5, read_timeout=0.5, retries={"mode": "standard", "max_attempts": 1}, max_pool_connections=2
    )
    endpoint = like.meta.endpoint_url
    local = "amazonaws.com" not in endpoint
    probe: DynamoDBClient = local_client("dynamodb", like.meta.region_name, endpoint if local else None, config)
    return probe


def table_ready(client: DynamoDBClient, table_name: str) -> bool:
    """Whether DynamoDB answers DescribeTable for the table (readiness)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client.describe_table(TableName=table_name)
    except (ClientError, BotoCoreError):
        return False
    return True


def probing(mirror: Mirror) -> AsyncDynamo:
    """The event loop's probe client for ``mirror``'s endpoint: as ``probe_client``'s, one attempt
    of at most 0.5 s to connect and 0.5 s to read, on a pool of two connections of its own."""
    return AsyncDynamo.of(dataclasses.replace(mirror, connect_timeout=0.5, read_timeout=0.5, attempts=1, pool_size=2))


async def table_answers(probe: AsyncDynamo, table_name: str) -> bool:
    """Whether DynamoDB answers DescribeTable for the table (readiness), awaited on the loop."""
    try:
        await send(probe.client(), "DescribeTable", {"TableName": table_name})
    except DatastoreError:  # unanswered, refused, or no credentials to sign with
        return False
    return True


def endpoint_answers(client: DynamoDBClient) -> bool:
    """Whether DynamoDB answers at all (start-up: the table may not exist yet)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client.list_tables(Limit=1)
    except (ClientError, BotoCoreError):
        return False
    return True


def wait_until_answering(
    client: DynamoDBClient,
    *,
    announce: Callable[[], None],
    first_delay: float = 0.25,
    max_delay: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Block until DynamoDB answers, backing off exponentially; ``announce`` once if it must wait.

    Returns the number of failed checks (0 when DynamoDB answered at once).
    """
    failures = 0
    delay = first_delay
    while not endpoint_answers(client):
        if failures == 0:
            announce()
        failures += 1
        sleep(delay)
        delay = min(max_delay, delay * 2)
    return failures
