"""Is DynamoDB there? Checks for readiness and start-up, on a client of their own.

The probe client (``probing``) has short timeouts, one attempt and a small pool of its own, so
a check is never queued behind request traffic and never waits out the request client's
retries: the API's readiness and ``server.py run``'s wait for DynamoDB, both awaited on the
event loop, so a start needs no boto3. ``table_ready`` is the commands' (boto3, blocking), whose
botocore errors are imported by it alone.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from datastore.aws.client import AsyncDynamo, Mirror, send
from datastore.errors import DatastoreError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def table_ready(client: DynamoDBClient, table_name: str) -> bool:
    """Whether DynamoDB answers DescribeTable for the table (readiness)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client.describe_table(TableName=table_name)
    except (ClientError, BotoCoreError):
        return False
    return True


def probing(mirror: Mirror) -> AsyncDynamo:
    """The event loop's probe client for ``mirror``'s endpoint: one attempt of at most 0.5 s to
    connect and 0.5 s to read, so a check ends within about 1 s, on a pool of two connections
    of its own."""
    return AsyncDynamo.of(dataclasses.replace(mirror, connect_timeout=0.5, read_timeout=0.5, attempts=1, pool_size=2))


async def table_answers(probe: AsyncDynamo, table_name: str) -> bool:
    """Whether DynamoDB answers DescribeTable for the table (readiness), awaited on the loop."""
    try:
        await send(probe.client(), "DescribeTable", {"TableName": table_name})
    except DatastoreError:  # unanswered, refused, or no credentials to sign with
        return False
    return True


async def endpoint_answers(probe: AsyncDynamo) -> bool:
    """Whether DynamoDB answers at all (start-up: the table may not exist yet), awaited on the loop."""
    try:
        await send(probe.client(), "ListTables", {"Limit": 1})
    except DatastoreError:  # unanswered, refused, or no credentials to sign with
        return False
    return True


async def wait_until_answering(
    probe: AsyncDynamo,
    *,
    announce: Callable[[], None],
    first_delay: float = 0.25,
    max_delay: float = 5.0,
) -> int:
    """Wait until DynamoDB answers ``probe`` (one of ``probing``'s), backing off exponentially;
    ``announce`` once if it must wait.

    Returns the number of failed checks (0 when DynamoDB answered at once).
    """
    failures = 0
    delay = first_delay
    while not await endpoint_answers(probe):
        if failures == 0:
            announce()
        failures += 1
        await asyncio.sleep(delay)
        delay = min(max_delay, delay * 2)
    return failures
