"""Creating the table: one table, one overloaded global secondary index, and its stream.

The stream (NEW_AND_OLD_IMAGES) is what live updates read (datastore/feed/): every write's
items, before and after. A table created by an earlier release has none; ``ensure_table``
and ``server.py migrate`` (datastore/upkeep/migration.py) turn it on (``ensure_stream``), which is
a change to the table, not to its data: no item changes and the data layout stays the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final

from datastore.aws.client import send
from datastore.errors import DatastoreError
from datastore.kinds import layout
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import LayoutScope
from datastore.upkeep import layout_version

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


# Both images of every changed item: a change event tells what an item was and what it became.
STREAM_VIEW_TYPE: Final = "NEW_AND_OLD_IMAGES"
STREAM_SPECIFICATION: Final = {"StreamEnabled": True, "StreamViewType": STREAM_VIEW_TYPE}
# TTL statuses under which expired items are (or are about to be) deleted: nothing to turn on.
TIME_TO_LIVE_ON: Final = ("ENABLED", "ENABLING")


class StreamMisconfigured(Exception):
    """The table has a stream of another view type; the message says what to do."""


def table_definition(name: str) -> dict[str, object]:
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": attribute, "AttributeType": "S"}
            for attribute in (keys.PK, keys.SK, keys.GSI1PK, keys.GSI1SK)
        ],
        "KeySchema": [
            {"AttributeName": keys.PK, "KeyType": "HASH"},
            {"AttributeName": keys.SK, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": keys.GSI1,
                "KeySchema": [
                    {"AttributeName": keys.GSI1PK, "KeyType": "HASH"},
                    {"AttributeName": keys.GSI1SK, "KeyType": "RANGE"},
                ],
                # Every GSI1 list shows whole entities; ALL keeps each list one Query.
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "StreamSpecification": dict(STREAM_SPECIFICATION),
    }


async def ensure_table(
    client: DynamoDBClient | Callable[[], DynamoDBClient],
    table: Table,
    *,
    before_changes: Callable[[], Awaitable[None]] | None = None,
) -> bool:
    """Create the table unless it exists, with TTL and its stream on; True when it was created.

    A table created here holds nothing yet, so it is stamped with this release's data layout
    (datastore/upkeep/layout_version.py); an existing one keeps its data as it is, for the start-up
    check, and gets its stream if an earlier release created it without one.
    ``before_changes`` runs once the table exists, before its TTL or stream is touched: a
    caller refusing the table there (``server.py run`` refusing another release's layout)
    leaves it exactly as it found it. ``client`` is the control plane's (boto3, its calls on a
    thread), or what makes it: it is made only when something is to be created or changed, since
    whether the table is as it should be is asked first on the event loop (``as_it_should_be``),
    so a start on such a table imports no boto3. ``table`` is any Table of the table, whose
    stamp goes through the data plane.
    """
    name = table.name
    if await as_it_should_be(table):
        if before_changes is not None:
            await before_changes()
        return False
    control = client() if callable(client) else client
    created = await asyncio.to_thread(_create_unless_exists, control, name)
    if created:
        with suppress(layout_version.LayoutChanged):  # stamped by whoever created it meanwhile
            await layout_version.stamp(table.with_scope(LayoutScope()), layout_version.CURRENT, over=None)
    if before_changes is not None:
        await before_changes()
    await asyncio.to_thread(ensure_time_to_live, control, name)
    await asyncio.to_thread(ensure_stream, control, name)
    return created


async def as_it_should_be(table: Table) -> bool:
    """Whether the table exists with its stream (``STREAM_VIEW_TYPE``) and its TTL on: what
    ``ensure_table`` would leave unchanged. Asked on the event loop with the process's own
    credentials (DescribeTable, DescribeTimeToLive: what the control plane asks); False when
    anything is missing or DynamoDB does not answer, for the control plane to decide and say why."""
    client = table.dynamo.client()
    # Both at once: a start waits for one round trip to DynamoDB, not two.
    described: dict[str, Any] | BaseException
    time_to_live: dict[str, Any] | BaseException
    described, time_to_live = await asyncio.gather(
        send(client, "DescribeTable", {"TableName": table.name}),
        send(client, "DescribeTimeToLive", {"TableName": table.name}),
        return_exceptions=True,
    )
    if isinstance(described, DatastoreError) or isinstance(time_to_live, DatastoreError):
        return False
    if isinstance(described, BaseException):
        raise described
    if isinstance(time_to_live, BaseException):
        raise time_to_live
    specification: dict[str, Any] = dict((described.get("Table") or {}).get("StreamSpecification") or {})
    status = (time_to_live.get("TimeToLiveDescription") or {}).get("TimeToLiveStatus")
    return bool(
        specification.get("StreamEnabled")
        and specification.get("StreamViewType") == STREAM_VIEW_TYPE
        and status in TIME_TO_LIVE_ON
    )


def _create_unless_exists(client: DynamoDBClient, name: str) -> bool:
    """Create the table and wait for it unless it exists; True when it was created."""
    # Imported here: a serving process imports this module (the change feed's) and never creates a table.
    from botocore.exceptions import ClientError

    try:
        client.describe_table(TableName=name)
        created = False
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
        try:
            client.create_table(**table_definition(name))  # type: ignore[arg-type]
        except ClientError as error:
            # Created meanwhile: by another worker, or by our own first try whose answer was
            # lost to a timeout before botocore retried it. Either way it is there to wait for.
            if error.response.get("Error", {}).get("Code") != "ResourceInUseException":
                raise
        client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        created = True
    return created


def stream_arn(client: DynamoDBClient, name: str) -> str | None:
    """The table's current stream (DescribeTable's LatestStreamArn) when one is on; else None."""
    table = client.describe_table(TableName=name)["Table"]
    specification: dict[str, Any] = dict(table.get("StreamSpecification") or {})
    if not specification.get("StreamEnabled"):
        return None
    return table.get("LatestStreamArn")


def ensure_stream(client: DynamoDBClient, name: str) -> bool:
    """Turn the table's stream on (NEW_AND_OLD_IMAGES) unless it is; True when it did.

    A stream of another view type is refused, not replaced: replacing it would end the
    stream other readers (a stream-triggered Lambda) follow, which is the operator's call.
    """
    table = client.describe_table(TableName=name)["Table"]
    specification: dict[str, Any] = dict(table.get("StreamSpecification") or {})
    if specification.get("StreamEnabled"):
        if specification.get("StreamViewType") != STREAM_VIEW_TYPE:
            raise StreamMisconfigured(
                f"table {name} has a {specification.get('StreamViewType')} stream; live updates need "
                f"{STREAM_VIEW_TYPE}: disable the stream (aws dynamodb update-table --stream-specification "
                f"StreamEnabled=false) and run this again"
            )
        return False
    client.update_table(TableName=name, StreamSpecification=dict(STREAM_SPECIFICATION))  # type: ignore[arg-type]
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    return True


def ensure_time_to_live(client: DynamoDBClient, name: str) -> None:
    """Let DynamoDB delete expired items (``expiresAt``, epoch seconds): idempotency records, audit events past
    their retention, persisted documents."""
    description = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    if description.get("TimeToLiveStatus") in TIME_TO_LIVE_ON:
        return
    client.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": layout.EXPIRES_AT},
    )
