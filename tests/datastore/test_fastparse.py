"""The orjson response hook: the same answers as botocore's parser, errors still botocore's.

Each test builds clients of its own, one with the hook and one stock, against DynamoDB
Local; faults DynamoDB Local never sends (throttling, a corrupted body, unprocessed keys)
are answered at ``before-send``, so their bytes go through the whole parse path.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.exceptions import ClientError

from datastore import employees, fastparse, ids, keys
from datastore.client import make_client
from datastore.config import DatastoreSettings
from datastore.scope import PlatformScope
from datastore.table import Table
from tests.blocking import run
from tests.conftest import TEST_RETRY, Tenant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BLOB = bytes(range(256))


@pytest.fixture
def fast(settings: DatastoreSettings, table_name: str) -> DynamoDBClient:
    return make_client(settings)


@pytest.fixture
def stock(settings: DatastoreSettings, table_name: str) -> DynamoDBClient:
    return make_client(settings, stock=True)


class _Raw:
    """The raw stream an AWSResponse reads its content from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def _response(status: int, body: dict[str, Any], *, crc32: int | None = None) -> AWSResponse:
    raw = json.dumps(body).encode()
    headers = HTTPHeaders()
    headers["content-type"] = "application/x-amz-json-1.0"
    headers["x-amz-crc32"] = str(binascii.crc32(raw) if crc32 is None else crc32)
    return AWSResponse("http://injected", status, headers, _Raw(raw))


class Injector:
    """Answers the first ``len(planned)`` sends of one operation; the rest reach DynamoDB Local."""

    def __init__(self, planned: list[Callable[[dict[str, Any]], AWSResponse]]) -> None:
        self.planned = planned
        self.sends = 0

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        self.sends += 1
        if self.sends > len(self.planned):
            return None
        return self.planned[self.sends - 1](json.loads(request.body))


def inject(client: DynamoDBClient, operation: str, injector: Injector) -> Injector:
    # botocore's stubs type handlers as returning None; before-send handlers may answer.
    client.meta.events.register(f"before-send.dynamodb.{operation}", cast("Callable[..., None]", injector))
    return injector


def _binary_item(pk: str, sk: str) -> dict[str, Any]:
    return {
        keys.PK: {"S": pk},
        keys.SK: {"S": sk},
        "blob": {"B": BLOB},
        "blobs": {"BS": [b"\x00", b"\xff\xfe"]},
        "nested": {"M": {"inner": {"B": b"\x01\x02"}, "list": {"L": [{"B": b"\x03"}, {"S": "B"}]}}},
        "B": {"S": "an attribute named B"},
        "n": {"N": "1.5"},
    }


def _without_metadata(response: Any) -> dict[str, Any]:
    return {name: value for name, value in response.items() if name != "ResponseMetadata"}


def test_read_operations__binary_attributes__bytes_and_equal_to_botocore(
    fast: DynamoDBClient, stock: DynamoDBClient, table_name: str
) -> None:
    pk = f"FASTPARSE#{ids.new_id()}"
    for index in range(3):
        fast.put_item(TableName=table_name, Item=_binary_item(pk, f"ITEM#{index}"))
    key = {keys.PK: {"S": pk}, keys.SK: {"S": "ITEM#0"}}
    requests: list[tuple[str, dict[str, Any]]] = [
        ("get_item", {"TableName": table_name, "Key": key, "ReturnConsumedCapacity": "TOTAL"}),
        (
            "batch_get_item",
            {"RequestItems": {table_name: {"Keys": [key]}}, "ReturnConsumedCapacity": "TOTAL"},
        ),
        (
            "query",
            {
                "TableName": table_name,
                "KeyConditionExpression": "PK = :pk",
                "ExpressionAttributeValues": {":pk": {"S": pk}},
                "Limit": 2,
                "ReturnConsumedCapacity": "TOTAL",
            },
        ),
    ]
    for method, params in requests:
        fast_response = getattr(fast, method)(**params)
        assert _without_metadata(fast_response) == _without_metadata(getattr(stock, method)(**params)), method
        assert fast_response["ConsumedCapacity"], method
        assert fast_response["ResponseMetadata"]["HTTPStatusCode"] == 200
    item = fast.get_item(TableName=table_name, Key=key)["Item"]
    assert item["blob"]["B"] == BLOB
    assert sorted(item["blobs"]["BS"]) == [b"\x00", b"\xff\xfe"]
    assert item["nested"]["M"]["list"]["L"] == [{"B": b"\x03"}, {"S": "B"}]


def test_success__botocore_parser__handed_an_empty_body(fast: DynamoDBClient, table_name: str) -> None:
    seen: list[bytes] = []

    def after_ours(response_dict: dict[str, Any], **_: Any) -> None:
        seen.append(response_dict["body"])

    fast.meta.events.register_last("before-parse.dynamodb.Query", after_ours)
    response = fast.query(
        TableName=table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": f"FASTPARSE#{ids.new_id()}"}},
        ReturnConsumedCapacity="TOTAL",
    )
    assert seen == [b""]
    assert response["Items"] == [] and response["Count"] == 0


def test_error__missing_table__botocore_client_error(fast: DynamoDBClient) -> None:
    with pytest.raises(ClientError) as raised:
        fast.get_item(TableName="no-such-table", Key={keys.PK: {"S": "a"}, keys.SK: {"S": "b"}})
    assert raised.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_error__throttled_once__retried_by_botocore(fast: DynamoDBClient, table_name: str) -> None:
    throttled = {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException", "message": "slow down"}
    injector = inject(fast, "GetItem", Injector([lambda _body: _response(400, throttled)]))
    response = fast.get_item(TableName=table_name, Key={keys.PK: {"S": "a"}, keys.SK: {"S": "b"}})
    assert injector.sends == 2
    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    assert "Item" not in response


def test_error__always_throttled__client_error_after_the_bound(
    settings: DatastoreSettings, fast: DynamoDBClient, table_name: str
) -> None:
    throttled = {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException", "message": "slow down"}
    # DYNAMODB_MAX_ATTEMPTS counts every try, the first included.
    sends = settings.max_attempts
    injector = inject(fast, "Query", Injector([lambda _body: _response(400, throttled)] * sends))
    with pytest.raises(ClientError) as raised:
        fast.query(
            TableName=table_name,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": "a"}},
        )
    assert raised.value.response["Error"]["Code"] == "ThrottlingException"
    assert injector.sends == sends
    assert raised.value.response["ResponseMetadata"]["RetryAttempts"] == settings.max_attempts - 1


def test_crc32__mismatch__retried_by_botocore(fast: DynamoDBClient, table_name: str) -> None:
    corrupted = {"Item": {keys.PK: {"S": "forged"}, keys.SK: {"S": "forged"}}}
    injector = inject(fast, "GetItem", Injector([lambda _body: _response(200, corrupted, crc32=1)]))
    response = fast.get_item(TableName=table_name, Key={keys.PK: {"S": "a"}, keys.SK: {"S": "b"}})
    assert injector.sends == 2
    assert "Item" not in response


def test_batch_get__unprocessed_keys_on_the_wire__table_retries_them(
    fast: DynamoDBClient, table_name: str, tenant: Tenant
) -> None:
    def unprocessed(body: dict[str, Any]) -> AWSResponse:
        requests = body["RequestItems"]
        return _response(
            200,
            {
                "Responses": {name: [] for name in requests},
                "UnprocessedKeys": {name: {"Keys": request["Keys"]} for name, request in requests.items()},
                "ConsumedCapacity": [{"TableName": name, "CapacityUnits": 0.0} for name in requests],
            },
        )

    injector = inject(fast, "BatchGetItem", Injector([unprocessed, unprocessed]))
    second = tenant.employee()
    table = Table(fast, table_name, PlatformScope(), retry=TEST_RETRY, sleep=lambda _seconds: None)
    found = run(
        employees.get_employees(
            table.with_scope(tenant.table.scope), [tenant.admin.emp_id, second.emp_id, tenant.admin.emp_id]
        )
    )
    assert found == [tenant.admin, second, tenant.admin]
    assert injector.sends == 3


def _shape_types(shape: Any, path: str, seen: set[str]) -> list[tuple[str, str]]:
    if shape.name in seen:
        return []
    seen = seen | {shape.name}
    found = [(path, shape.type_name)]
    if shape.type_name == "structure":
        for name, member in shape.members.items():
            found += _shape_types(member, f"{path}.{name}", seen)
    elif shape.type_name == "list":
        found += _shape_types(shape.member, f"{path}[]", seen)
    elif shape.type_name == "map":
        found += _shape_types(shape.value, f"{path}{{}}", seen)
    return found


def test_operations__output_models__no_value_botocore_would_convert_but_binaries(fast: DynamoDBClient) -> None:
    service = fast.meta.service_model
    for operation in fastparse.OPERATIONS:
        output = service.operation_model(operation).output_shape
        types = _shape_types(output, operation, set())
        assert not [path for path, kind in types if kind == "timestamp"], operation
        blobs = {path.rsplit(".", 1)[1] for path, kind in types if kind == "blob"}
        assert blobs <= {"B", "BS[]"}, (operation, blobs)
