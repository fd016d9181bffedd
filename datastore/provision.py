"""Creating the table: one table, one overloaded global secondary index."""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from datastore import keys, layout, layout_version
from datastore.scope import LayoutScope
from datastore.table import Table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


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
    }


def ensure_table(client: DynamoDBClient, name: str) -> bool:
    """Create the table unless it exists, with TTL on; True when it was created.

    A table created here holds nothing yet, so it is stamped with this release's data layout
    (datastore/layout_version.py); an existing one is left as it is, for the start-up check.
    """
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
        with suppress(layout_version.LayoutChanged):  # stamped by whoever created it meanwhile
            layout_version.stamp(Table(client, name, LayoutScope()), layout_version.CURRENT, over=None)
    ensure_time_to_live(client, name)
    return created


def ensure_time_to_live(client: DynamoDBClient, name: str) -> None:
    """Let DynamoDB delete expired idempotency records (``expiresAt``, epoch seconds)."""
    description = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    if description.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
        return
    client.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": layout.EXPIRES_AT},
    )
