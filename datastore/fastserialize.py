"""DynamoDB's requests encoded with orjson instead of botocore's shape walk.

botocore serialises a JSON-protocol request by walking the input shape value by value into
a copy of the parameters, then ``json.dumps``: about 290 us for a BatchGetItem of 100 keys,
against 5.5 us for ``orjson.dumps`` of the same parameters (``python -m bench.http_session``
measures whole calls; the serialiser alone was timed with both on the same parameters). For
DynamoDB's item operations the walk changes nothing but blobs: the wire format *is* the
low-level parameters (attribute values already in ``{"S": ...}`` form), and the walk visits
members in the parameters' own order, so the body carries the same JSON.

So for an operation whose input shapes hold no timestamps, no renamed members and no host
prefix (checked once per operation, from botocore's own model), the request is botocore's
template for that operation (method, path, ``X-Amz-Target``, ``Content-Type``: what its
serialiser gives for no parameters) with the body from orjson. Anything else goes to
botocore's serialiser: parameters with bytes in them (``B``/``BS`` values, base64-encoded
on the wire), a top-level name the input shape does not have (botocore raises for it), or
any value orjson would write differently from ``json.dumps`` (dates, dataclasses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import orjson

if TYPE_CHECKING:
    from botocore.model import OperationModel, Shape
    from mypy_boto3_dynamodb import DynamoDBClient

# Values json.dumps refuses raise for orjson too, so botocore's serialiser gets them.
_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


class FastSerializer:
    """Stands in for a client's botocore serialiser (``serialize_to_request``)."""

    def __init__(self, botocore_serializer: Any) -> None:
        self._botocore = botocore_serializer
        # Per operation name: (template request, top-level member names), or None: botocore's.
        self._plans: dict[str, tuple[dict[str, Any], frozenset[str]] | None] = {}

    def serialize_to_request(self, parameters: dict[str, Any], operation_model: OperationModel) -> dict[str, Any]:
        name = operation_model.name
        if name not in self._plans:
            self._plans[name] = self._plan(operation_model)  # racing threads store the same plan
        plan = self._plans[name]
        if plan is not None and parameters.keys() <= plan[1]:
            try:
                body = orjson.dumps(parameters, option=_OPTIONS)
            except TypeError:  # bytes (a blob), or a value orjson passes through
                pass
            else:
                template = plan[0]
                return {**template, "headers": dict(template["headers"]), "body": body}
        request: dict[str, Any] = self._botocore.serialize_to_request(parameters, operation_model)
        return request

    def fast(self, operation_model: OperationModel) -> bool:
        """Whether ``operation_model``'s requests are encoded here (for tests)."""
        return self._plan(operation_model) is not None

    def _plan(self, operation_model: OperationModel) -> tuple[dict[str, Any], frozenset[str]] | None:
        shape = operation_model.input_shape
        if (
            operation_model.metadata.get("protocol") != "json"
            or shape is None
            or "hostPrefix" in (operation_model.endpoint or {})
            or not _plain(shape, set())
        ):
            return None
        template: dict[str, Any] = self._botocore.serialize_to_request({}, operation_model)
        return template, frozenset(shape.members)


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


def install(client: DynamoDBClient) -> DynamoDBClient:
    """Encode ``client``'s requests here (idempotent). botocore keeps the serialiser on the
    client (``_serializer``, private); a botocore without it keeps serialising as before."""
    current: Any = getattr(client, "_serializer", None)
    if current is not None and not isinstance(current, FastSerializer):
        client._serializer = FastSerializer(current)  # type: ignore[attr-defined]
    return client
