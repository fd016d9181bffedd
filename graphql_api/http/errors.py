"""Transport failures: refused before GraphQL runs, answered as JSON GraphQL errors with a code."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any


class TransportCode(StrEnum):
    # The request is not a well-formed GraphQL-over-HTTP request (bad JSON, not an object,
    # no query, batching off, several operations and no operationName).
    BAD_REQUEST = "BAD_REQUEST"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    NOT_ACCEPTABLE = "NOT_ACCEPTABLE"
    PERSISTED_QUERY_NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
    PERSISTED_QUERY_NOT_SUPPORTED = "PERSISTED_QUERY_NOT_SUPPORTED"
    PERSISTED_QUERY_HASH_MISMATCH = "PERSISTED_QUERY_HASH_MISMATCH"
    PERSISTED_QUERY_REQUIRED = "PERSISTED_QUERY_REQUIRED"
    # A subscription operation: not served over HTTP (graphql_api/subscriptions/edge.py).
    SUBSCRIPTIONS_NOT_SUPPORTED = "SUBSCRIPTIONS_NOT_SUPPORTED"


class TransportError(Exception):
    """A refusal with its HTTP status; ``headers`` go on the response (Allow, for a 405)."""

    def __init__(
        self,
        status: int,
        code: TransportCode,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return {"errors": [{"message": str(self), "extensions": {"code": self.code.value}}]}


def bad_request(message: str) -> TransportError:
    return TransportError(400, TransportCode.BAD_REQUEST, message)
