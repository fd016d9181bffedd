"""A GET or POST to /graphql, read into operations, or refused with a coded transport error.

POST takes ``application/json`` (UTF-8) holding one object, or an array of them when batching
is on; GET takes the same members as URL parameters, ``variables`` and ``extensions`` as JSON
text. JSON is parsed with orjson, whose nesting limit (1024) turns a nesting bomb into a
plain parse failure; the body has already been bounded by MaxBodySize.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import orjson
from starlette.requests import Request

from graphql_api.http.errors import TransportCode, TransportError, bad_request

ALLOW: dict[str, str] = {"Allow": "GET, POST"}


@dataclass(frozen=True, slots=True)
class Operation:
    """One GraphQL request as sent: the document's text or its id (persisted documents)."""

    query: str | None
    variables: dict[str, Any] | None
    operation_name: str | None
    extensions: dict[str, Any] | None
    # Trusted documents: graphql-codegen's client preset and Relay send ``documentId``.
    document_id: str | None = None


async def read_operations(request: Request, batch_max_operations: int) -> Operation | list[Operation]:
    """The request's operation, or its batch; a list only when batching is on."""
    if request.method == "GET":
        return _operation(_query_parameters(request))
    if request.method != "POST":
        raise TransportError(
            405, TransportCode.METHOD_NOT_ALLOWED, "GraphQL is served over GET and POST", headers=ALLOW
        )
    _require_json(request.headers.get("content-type"))
    data = _json(await request.body(), "the body")
    if isinstance(data, list):
        return _batch(data, batch_max_operations)
    return _operation(data, "the body")


def _require_json(content_type: str | None) -> None:
    if content_type is None:
        raise TransportError(415, TransportCode.UNSUPPORTED_MEDIA_TYPE, "a POST needs Content-Type: application/json")
    media_type, *parameters = (part.strip() for part in content_type.split(";"))
    if media_type.lower() != "application/json":
        raise TransportError(
            415, TransportCode.UNSUPPORTED_MEDIA_TYPE, f"Content-Type {media_type!r} is not supported; send JSON"
        )
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() != "utf-8":
            raise TransportError(415, TransportCode.UNSUPPORTED_MEDIA_TYPE, "the body must be UTF-8 JSON")


def _json(raw: bytes | str, what: str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # The parser's own message names positions in the input only; a fixed one says as much.
        raise bad_request(f"{what} is not valid JSON (or nests deeper than 1024 levels)") from None


def _query_parameters(request: Request) -> dict[str, Any]:
    parameters: dict[str, Any] = dict(request.query_params)
    for name in ("variables", "extensions"):
        raw = parameters.get(name)
        if raw is not None and raw != "":
            parameters[name] = _json(raw, f"the {name} parameter")
        elif raw == "":
            parameters[name] = None
    return parameters


def _batch(data: list[Any], batch_max_operations: int) -> list[Operation]:
    if batch_max_operations == 0:
        # Only an array of operations is a batch; any other array is just not a request.
        if data and all(isinstance(item, dict) for item in data):
            raise bad_request("batching is not enabled: send one operation per request")
        raise bad_request(f"the body must be a JSON object with a query, not {_kind(data)}")
    if not data:
        raise bad_request("the batch is empty")
    if len(data) > batch_max_operations:
        raise bad_request(f"a batch holds at most {batch_max_operations} operations")
    return [_operation(item, f"operation {index} of the batch") for index, item in enumerate(data)]


def operation_of(data: Any) -> Operation:
    """One operation as a WebSocket's subscribe payload holds it.

    graphql-ws cannot send a payload without ``query``, so a client sending a document by its
    id (``documentId``, or ``extensions.persistedQuery``) sends ``"query": ""`` beside it: that
    is no text, and the id is resolved as over HTTP, where the id is sent alone.
    """
    operation = _operation(data, "the subscribe message's payload")
    by_id = operation.document_id is not None or "persistedQuery" in (operation.extensions or {})
    if operation.query == "" and by_id:
        return replace(operation, query=None)
    return operation


def _kind(value: Any) -> str:
    """What a JSON value is, for a message: "an array", "a string", "null"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _operation(data: Any, what: str = "the request") -> Operation:
    if not isinstance(data, dict):
        raise bad_request(f"{what} must be a JSON object with a query, not {_kind(data)}")
    query = data.get("query")
    if query is not None and not isinstance(query, str):
        raise bad_request("query must be a string")
    variables = data.get("variables")
    if variables is not None and not isinstance(variables, dict):
        raise bad_request("variables must be an object")
    operation_name = data.get("operationName")
    if operation_name is not None and not isinstance(operation_name, str):
        raise bad_request("operationName must be a string")
    extensions = data.get("extensions")
    if extensions is not None and not isinstance(extensions, dict):
        raise bad_request("extensions must be an object")
    document_id = data.get("documentId")
    if document_id is not None and not isinstance(document_id, str):
        raise bad_request("documentId must be a string")
    return Operation(query, variables, operation_name or None, extensions, document_id)
