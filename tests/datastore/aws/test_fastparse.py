"""Binary attribute values in the answers the event loop's client decodes itself (orjson,
datastore/aws/exchange.py): bytes, as botocore hands them out, wherever they sit in an item.

Items are written with the boto3 client (setup) and read back both through a Table and
through that stock client, against DynamoDB Local.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from datastore.aws import fastparse
from datastore.tenancy import keys
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BLOB = bytes(range(256))
# Every operation a Table sends: each 200 answer goes through the same decoding.
TABLE_OPERATIONS = (
    "GetItem",
    "BatchGetItem",
    "Query",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "TransactWriteItems",
    "BatchWriteItem",
)


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


def test_read_operations__binary_attributes__bytes_and_equal_to_botocore(
    tenant: Tenant, client: DynamoDBClient
) -> None:
    pk = keys.org_pk(tenant.org_id)
    prefix = f"FASTPARSE#{ids.new_id()}#"
    sks = [f"{prefix}{index}" for index in range(3)]
    for sk in sks:
        client.put_item(TableName=tenant.table.name, Item=_binary_item(pk, sk))  # type: ignore[arg-type]
    wanted = [keys.Key(pk, sk) for sk in sks]

    got = run(tenant.table.get(wanted[0], consistent=True))
    batch = run(tenant.table.batch_get(wanted))
    queried = run(tenant.table.query(pk, sk_prefix=prefix, limit=10, consistent=True)).items

    stock = [
        client.get_item(TableName=tenant.table.name, Key=key.wire(), ConsistentRead=True)["Item"] for key in wanted
    ]
    assert got == stock[0]
    assert batch == stock
    assert queried == stock
    assert got is not None
    assert got["blob"]["B"] == BLOB
    assert sorted(got["blobs"]["BS"]) == [b"\x00", b"\xff\xfe"]
    assert got["nested"]["M"]["inner"]["B"] == b"\x01\x02"
    assert got["nested"]["M"]["list"]["L"] == [{"B": b"\x03"}, {"S": "B"}]
    assert got["B"] == {"S": "an attribute named B"}  # an attribute named B is no binary value


def test_decode_binaries__only_attribute_values_named_b_or_bs() -> None:
    answer: dict[str, Any] = {
        "Item": {
            "B": {"S": "QUFB"},  # an attribute named B: its value is a map, left alone
            "b": {"B": "AAE="},
            "bs": {"BS": ["AA==", "//4="]},
            "l": {"L": [{"B": "Aw=="}, {"S": "B"}]},
        },
        "ConsumedCapacity": {"CapacityUnits": 0.5},
    }
    fastparse.decode_binaries(answer)
    assert answer["Item"] == {
        "B": {"S": "QUFB"},
        "b": {"B": b"\x00\x01"},
        "bs": {"BS": [b"\x00", b"\xff\xfe"]},
        "l": {"L": [{"B": b"\x03"}, {"S": "B"}]},
    }


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


def test_operations__output_models__no_value_botocore_would_convert_but_binaries(client: DynamoDBClient) -> None:
    """What botocore's parser would turn from JSON into another type, in the answer of any
    operation a Table sends, is a binary attribute value only: decoding those is all it takes."""
    service = client.meta.service_model
    for operation in TABLE_OPERATIONS:
        output = service.operation_model(operation).output_shape
        types = _shape_types(output, operation, set())
        assert not [path for path, kind in types if kind == "timestamp"], operation
        blobs = {path.rsplit(".", 1)[1] for path, kind in types if kind == "blob"}
        assert blobs <= {"B", "BS[]"}, (operation, blobs)
