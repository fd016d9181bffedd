"""DynamoDB's successful responses decoded with orjson instead of botocore's shape walk.

botocore parses a JSON response by decoding it and then walking the output shape value by
value: about 36 us per item against orjson's 1.4 us (PERFORMANCE.md). For the item
operations the walk changes nothing but binary values (``B``/``BS`` arrive base64-encoded,
botocore hands out bytes), so this module decodes the body itself and converts those.

It hooks ``before-parse.dynamodb.<Operation>`` (botocore >= 1.35.16): the handler fills
``customized_response_dict``, which botocore merges into its parsed result, and empties the
body it hands the parser, so the shape walk runs over nothing. Everything else stays
botocore's: only 2xx bodies are touched, so errors, throttling and retries are parsed as
before; the ``x-amz-crc32`` check reads the HTTP response's own content, which is left as
it came; ``ResponseMetadata`` is built from the headers. A body orjson cannot decode is
left to botocore too.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Final

import orjson

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# The operations whose outputs hold only JSON-native values and attribute values: no
# timestamps, and blobs only as B/BS (tests/datastore/test_fastparse.py checks the models).
OPERATIONS: Final = (
    "GetItem",
    "BatchGetItem",
    "Query",
    "Scan",
    "TransactGetItems",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "BatchWriteItem",
    "TransactWriteItems",
)

_UNIQUE_ID: Final = "hr-fastparse"
# Present in the raw body whenever a binary attribute value is; a string "B" matches too,
# which costs a walk that finds nothing, never a wrong answer.
BINARY_MARKERS: Final = (b'"B"', b'"BS"')


def install(client: DynamoDBClient) -> DynamoDBClient:
    """Register the handler on ``client`` for the item operations (idempotent)."""
    if client.meta.service_model.resolved_protocol != "json":
        # A CBOR or other wire protocol is not ours to decode; botocore keeps parsing it.
        return client
    for operation in OPERATIONS:
        client.meta.events.register(
            f"before-parse.dynamodb.{operation}", parse_success, unique_id=f"{_UNIQUE_ID}-{operation}"
        )
    return client


def parse_success(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any) -> None:
    """Decode a 2xx body into ``customized_response_dict`` and leave botocore nothing to walk."""
    if not 200 <= response_dict["status_code"] < 300:
        return
    body = response_dict["body"]
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return
    if not isinstance(parsed, dict):
        return
    if BINARY_MARKERS[0] in body or BINARY_MARKERS[1] in body:
        decode_binaries(parsed)
    customized_response_dict.update(parsed)
    # botocore's parser still runs (it adds ResponseMetadata); an empty body makes its walk
    # visit no values. The HTTP response object, which the CRC32 check reads, is untouched.
    response_dict["body"] = b""


def decode_binaries(value: Any) -> None:
    """Turn every ``{"B": base64}`` and ``{"BS": [base64, ...]}`` below ``value`` into bytes.

    Only attribute values have a ``B``/``BS`` key with a string (list) value: an item's own
    attribute named ``B`` maps to a dict, and expression attribute names start with ``#``.
    """
    if isinstance(value, dict):
        for name, member in value.items():
            if name == "B" and isinstance(member, str):
                value[name] = base64.b64decode(member)
            elif name == "BS" and isinstance(member, list):
                value[name] = [base64.b64decode(entry) for entry in member]
            elif isinstance(member, dict | list):
                decode_binaries(member)
    elif isinstance(value, list):
        for member in value:
            if isinstance(member, dict | list):
                decode_binaries(member)
