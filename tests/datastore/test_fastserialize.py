"""Requests encoded with orjson: what botocore's serialiser gives, or botocore's serialiser itself.

Each case serialises the same parameters with the product client's serialiser and with a
stock client's, and compares the request dicts (the bodies as JSON values: orjson writes no
spaces and UTF-8 where json.dumps escapes). The item operations' own round trips through
DynamoDB Local are every other datastore test.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from datastore import library_internals
from datastore.client import make_client
from datastore.config import DatastoreSettings
from datastore.fastparse import OPERATIONS
from datastore.fastserialize import FastSerializer

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEY = {"PK": {"S": "ORG#01J0000000000000000000000"}, "SK": {"S": "EMP#01J0000000000000000000001"}}
ITEM = {
    **KEY,
    "firstName": {"S": "Zoë"},
    "n": {"N": "3"},
    "tags": {"SS": ["a", "b"]},
    "m": {"M": {"nested": {"L": [{"BOOL": True}, {"NULL": True}]}}},
}
CASES: dict[str, dict[str, Any]] = {
    "GetItem": {"TableName": "hr", "Key": KEY, "ConsistentRead": True, "ReturnConsumedCapacity": "TOTAL"},
    "BatchGetItem": {
        "RequestItems": {
            "hr": {"Keys": [KEY] * 3, "ProjectionExpression": "#a", "ExpressionAttributeNames": {"#a": "a"}}
        },
        "ReturnConsumedCapacity": "TOTAL",
    },
    "Query": {
        "TableName": "hr",
        "IndexName": "GSI1",
        "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :p)",
        "ExpressionAttributeNames": {"#pk": "GSI1PK", "#sk": "GSI1SK"},
        "ExpressionAttributeValues": {":pk": {"S": "x"}, ":p": {"S": "y"}},
        "ExclusiveStartKey": KEY,
        "Limit": 50,
        "ScanIndexForward": False,
    },
    "TransactWriteItems": {
        "TransactItems": [
            {"Put": {"TableName": "hr", "Item": ITEM, "ConditionExpression": "attribute_not_exists(PK)"}},
            {
                "Update": {
                    "TableName": "hr",
                    "Key": KEY,
                    "UpdateExpression": "ADD #c :one",
                    "ExpressionAttributeNames": {"#c": "c"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            },
        ],
        "ClientRequestToken": "token-1",
    },
}


@pytest.fixture(scope="module")
def clients(settings: DatastoreSettings) -> tuple[DynamoDBClient, DynamoDBClient]:
    return make_client(settings), make_client(settings, stock=True)


def serialise(client: DynamoDBClient, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    model = client.meta.service_model.operation_model(operation)
    request: dict[str, Any] = library_internals.serializer(client).serialize_to_request(params, model)
    return request


@pytest.mark.parametrize("operation", sorted(CASES))
def test_item_operation__orjson_body__the_request_botocore_builds(
    clients: tuple[DynamoDBClient, DynamoDBClient], operation: str
) -> None:
    fast, stock = clients
    ours, theirs = serialise(fast, operation, CASES[operation]), serialise(stock, operation, CASES[operation])
    assert json.loads(ours.pop("body")) == json.loads(theirs.pop("body"))
    assert ours == theirs
    # The encoding was orjson's, not botocore's fallback (json.dumps puts spaces in).
    assert serialise(fast, operation, CASES[operation])["body"] == orjson.dumps(CASES[operation])


def test_every_item_operation__takes_the_orjson_path(clients: tuple[DynamoDBClient, DynamoDBClient]) -> None:
    serializer = clients[0]._serializer  # type: ignore[attr-defined]
    assert isinstance(serializer, FastSerializer)
    model = clients[0].meta.service_model
    assert [op for op in OPERATIONS if not serializer.fast(model.operation_model(op))] == []


def test_blob_values__botocores_serialiser__base64_on_the_wire(clients: tuple[DynamoDBClient, DynamoDBClient]) -> None:
    fast, stock = clients
    params = {"TableName": "hr", "Item": {**KEY, "blob": {"B": b"\x00\xff"}, "set": {"BS": [b"\x01"]}}}
    assert serialise(fast, "PutItem", params) == serialise(stock, "PutItem", params)
    assert json.loads(serialise(fast, "PutItem", params)["body"])["Item"]["blob"] == {"B": "AP8="}


def test_unknown_parameter__botocores_serialiser_refuses_it(clients: tuple[DynamoDBClient, DynamoDBClient]) -> None:
    # The product client does not validate parameters (datastore/client.py): botocore's shape
    # walk is what refuses a name the operation does not have, and it still does.
    params = {"TableName": "hr", "Key": KEY, "NotAParameter": 1}
    with pytest.raises(KeyError, match="NotAParameter"):
        serialise(clients[0], "GetItem", params)


def test_misspelt_nested_member__botocores_serialiser_refuses_it(
    clients: tuple[DynamoDBClient, DynamoDBClient],
) -> None:
    # Sent as is, DynamoDB Local ignores the unknown name, and the write becomes unconditional.
    put = {"TableName": "hr", "Item": ITEM, "ConditonExpression": "attribute_not_exists(PK)"}
    with pytest.raises(KeyError, match="ConditonExpression"):
        serialise(clients[0], "TransactWriteItems", {"TransactItems": [{"Put": put}]})
    keys = {"hr": {"Keys": [KEY], "ProjectionExpresion": "#a"}}
    with pytest.raises(KeyError, match="ProjectionExpresion"):
        serialise(clients[0], "BatchGetItem", {"RequestItems": keys})


@pytest.mark.parametrize(
    "item",
    [
        {**KEY, "blob": {"B": "text, which botocore base64-encodes"}},
        {**KEY, "B": {"S": "an attribute named B"}},
    ],
    ids=["text blob", "attribute named B"],
)
def test_body_naming_a_blob__botocores_serialiser(
    clients: tuple[DynamoDBClient, DynamoDBClient], item: dict[str, Any]
) -> None:
    fast, stock = clients
    params = {"TableName": "hr", "Item": item}
    assert serialise(fast, "PutItem", params) == serialise(stock, "PutItem", params)


def test_operation_with_timestamps__botocores_serialiser(clients: tuple[DynamoDBClient, DynamoDBClient]) -> None:
    # ListBackups' TimeRangeLowerBound is a timestamp: json.dumps writes epoch seconds for it.
    serializer = clients[0]._serializer  # type: ignore[attr-defined]
    assert not serializer.fast(clients[0].meta.service_model.operation_model("ListBackups"))
