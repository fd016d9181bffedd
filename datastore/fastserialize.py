"""DynamoDB's requests encoded with orjson instead of botocore's shape walk.

botocore serialises a JSON-protocol request by walking the input shape value by value into
a copy of the parameters, then ``json.dumps``: about 290 us for a BatchGetItem of 100 keys,
against 5.5 us for ``orjson.dumps`` of the same parameters, 14 us with the checks below
(``python -m bench.http_session`` measures whole calls; the serialiser alone was timed
with both on the same parameters). For DynamoDB's item operations the walk changes nothing
but blobs: the wire format *is* the low-level parameters (attribute values already in
``{"S": ...}`` form), and the walk visits members in the parameters' own order, so the
body carries the same JSON.

So for an operation whose input shapes hold no timestamps, no renamed members and no host
prefix (checked once per operation, from botocore's own model), the request is botocore's
template for that operation (method, path, ``X-Amz-Target``, ``Content-Type``: what its
serialiser gives for no parameters) with the body from orjson. Anything else goes to
botocore's serialiser, which encodes it or raises as it always did:

- a member name its structure does not have, at any depth above the attribute values (the
  walk raises ``KeyError``; sent as is, DynamoDB may ignore it: a misspelt
  ``ConditionExpression`` would make a conditional write unconditional);
- a blob (``B``/``BS``): bytes, which orjson refuses, or text, which botocore base64-encodes
  (the body is searched for the two names, so an attribute named ``B`` takes this path too);
- a value orjson would write differently from ``json.dumps`` (dates, dataclasses, str
  subclasses).

Attribute values themselves (items, keys, expression values) are not walked: DynamoDB
checks them, and they are most of a request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import orjson
from botocore.exceptions import ParamValidationError

from datastore import library_internals

if TYPE_CHECKING:
    from botocore.model import OperationModel, Shape
    from mypy_boto3_dynamodb import DynamoDBClient

# Values json.dumps refuses raise for orjson too, so botocore's serialiser gets them.
_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
# In a body whenever a blob is: botocore base64-encodes those (a text "B" value as well).
_BLOB_MARKERS: Final = (b'"B"', b'"BS"')
# DynamoDB's attribute value: a union of type tags, below which nothing is walked.
_ATTRIBUTE_VALUE: Final = "AttributeValue"

Check = Callable[[Any], bool]


class FastSerializer:
    """Stands in for a client's botocore serialiser (``serialize_to_request``)."""

    def __init__(self, botocore_serializer: Any) -> None:
        self._botocore = botocore_serializer
        # Per operation name: (template request, the parameters' check), or None: botocore's.
        self._plans: dict[str, tuple[dict[str, Any], Check] | None] = {}

    def serialize_to_request(self, parameters: dict[str, Any], operation_model: OperationModel) -> dict[str, Any]:
        name = operation_model.name
        if name not in self._plans:
            self._plans[name] = self._plan(operation_model)  # racing threads store the same plan
        plan = self._plans[name]
        if plan is not None and plan[1](parameters):
            try:
                body = orjson.dumps(parameters, option=_OPTIONS)
            except TypeError:  # bytes (a blob), or a value orjson passes through
                pass
            else:
                if _BLOB_MARKERS[0] not in body and _BLOB_MARKERS[1] not in body:
                    # A fresh request dict: botocore adds to it, and to its headers.
                    return {**plan[0], "headers": dict(plan[0]["headers"]), "body": body}
        request: dict[str, Any] = self._botocore.serialize_to_request(parameters, operation_model)
        return request

    def fast(self, operation_model: OperationModel) -> bool:
        """Whether ``operation_model``'s requests are encoded here (for tests)."""
        return self._plan(operation_model) is not None

    def _plan(self, operation_model: OperationModel) -> tuple[dict[str, Any], Check] | None:
        shape = operation_model.input_shape
        if (
            operation_model.metadata.get("protocol") != "json"
            or shape is None
            or "hostPrefix" in (operation_model.endpoint or {})
            or not _plain(shape, set())
        ):
            return None
        try:
            template: dict[str, Any] = self._botocore.serialize_to_request({}, operation_model)
        except ParamValidationError:  # a validating serialiser: it must see every request
            return None
        check = _names_check(shape, set())
        return template, check if check is not None else _anything


def _plain(shape: Shape, seen: set[str]) -> bool:
    """No timestamp and no renamed member anywhere below ``shape`` (blobs are caught per call)."""
    if shape.name in seen:
        return True
    seen.add(shape.name)
    if shape.type_name == "timestamp":
        return False
    if shape.type_name == "structure":
        members: dict[str, Shape] = shape.members  # type: ignore[attr-defined]
        return all("name" not in member.serialization and _plain(member, seen) for member in members.values())
    if shape.type_name == "list":
        return _plain(shape.member, seen)  # type: ignore[attr-defined]
    if shape.type_name == "map":
        return _plain(shape.key, seen) and _plain(shape.value, seen)  # type: ignore[attr-defined]
    return True


def _anything(_: Any) -> bool:
    return True


def _names_check(shape: Shape, open_shapes: set[str]) -> Check | None:
    """A check that every structure below ``shape`` (down to the attribute values) uses only
    its own member names; None when there is no structure to check below it.

    A shape that contains itself other than through attribute values is not checked below
    its second appearance (DynamoDB's item operations have none).
    """
    if shape.name == _ATTRIBUTE_VALUE or shape.name in open_shapes:
        return None
    open_shapes.add(shape.name)
    try:
        if shape.type_name == "structure":
            members: dict[str, Shape] = shape.members  # type: ignore[attr-defined]
            names = frozenset(members)
            below = [(name, check) for name, member in members.items() if (check := _names_check(member, open_shapes))]

            def structure(value: Any) -> bool:
                if not isinstance(value, dict) or not value.keys() <= names:
                    return False
                return all(check(value[name]) for name, check in below if name in value)

            return structure
        if shape.type_name == "list":
            item = _names_check(shape.member, open_shapes)  # type: ignore[attr-defined]
            if item is None:
                return None
            return lambda value: isinstance(value, list | tuple) and all(item(v) for v in value)
        if shape.type_name == "map":
            entry = _names_check(shape.value, open_shapes)  # type: ignore[attr-defined]
            if entry is None:
                return None
            return lambda value: isinstance(value, dict) and all(entry(v) for v in value.values())
        return None
    finally:
        open_shapes.discard(shape.name)


def install(client: DynamoDBClient) -> DynamoDBClient:
    """Encode ``client``'s requests here (idempotent). botocore keeps the serialiser on the
    client (``library_internals.serializer``); a botocore without it keeps serialising as before."""
    current = library_internals.serializer(client)
    if current is not None and not isinstance(current, FastSerializer):
        library_internals.set_serializer(client, FastSerializer(current))
    return client
