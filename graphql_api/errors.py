"""GraphQL errors with a machine-readable ``extensions.code``, and the masking of the rest.

Expected failures are raised as ``ApiError`` (or are datastore errors, translated here);
anything else is a bug, logged with its stack trace under a request id and shown to the
client only as INTERNAL with that id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from enum import StrEnum
from typing import Any, Final

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from datastore.errors import Conflict, InvalidInput, NotFound, ScopeViolation, Unavailable

log = logging.getLogger("hr.errors")


class Code(StrEnum):
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    BAD_USER_INPUT = "BAD_USER_INPUT"
    CONFLICT = "CONFLICT"
    # DynamoDB unreachable, throttling past the retries or not answering: retry shortly.
    UNAVAILABLE = "UNAVAILABLE"
    # The request ran past its deadline (REQUEST_TIMEOUT_SECONDS): retry.
    TIMEOUT = "TIMEOUT"
    INTERNAL = "INTERNAL"


# A write whose answer was lost may have been applied; the same key makes the retry safe.
RETRY_SAME_KEY: Final = "the write may have been applied; retry with the same idempotencyKey to apply it exactly once"


class ApiError(Exception):
    def __init__(self, code: Code, message: str, **extensions: Any) -> None:
        super().__init__(message)
        self.code = code
        self.extensions = {"code": code.value, **extensions}


def bad_input(field: str, reason: str) -> ApiError:
    return ApiError(Code.BAD_USER_INPUT, f"{field} {reason}", field=field)


def unauthenticated(message: str = "authentication required") -> ApiError:
    return ApiError(Code.UNAUTHENTICATED, message)


def forbidden(message: str = "not allowed") -> ApiError:
    return ApiError(Code.FORBIDDEN, message)


def not_found(entity: str) -> ApiError:
    return ApiError(Code.NOT_FOUND, f"{entity} not found")


def unavailable(*, maybe_written: bool = False) -> ApiError:
    """DynamoDB could not serve the request; nothing names the backend's exception."""
    if maybe_written:
        return ApiError(
            Code.UNAVAILABLE,
            f"the service is temporarily unavailable; {RETRY_SAME_KEY}",
            retryable=True,
            maybeWritten=True,
        )
    return ApiError(Code.UNAVAILABLE, "the service is temporarily unavailable; retry shortly", retryable=True)


def timeout(seconds: float, *, maybe_written: bool = False) -> ApiError:
    """The request's deadline passed; what was not sent never will be."""
    message = f"the request did not finish within its {seconds:g} s deadline"
    if maybe_written:
        return ApiError(Code.TIMEOUT, f"{message}; {RETRY_SAME_KEY}", retryable=True, maybeWritten=True)
    return ApiError(Code.TIMEOUT, f"{message}; retry", retryable=True)


def translate(error: BaseException) -> ApiError | None:
    """The client-facing form of an expected error; None for a bug."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, InvalidInput):
        return ApiError(Code.BAD_USER_INPUT, str(error), field=error.field)
    if isinstance(error, NotFound):
        return not_found(error.entity)
    if isinstance(error, Conflict):
        extensions = {} if error.current_version is None else {"currentVersion": error.current_version}
        return ApiError(Code.CONFLICT, str(error), **extensions)
    if isinstance(error, Unavailable):
        return unavailable(maybe_written=error.maybe_written)
    return None


class ErrorCodes(SchemaExtension):
    """Gives every error a code; masks unexpected ones as INTERNAL with a request id.

    Strawberry's MaskErrors masks everything and drops extensions; here expected errors keep
    their code and details, and only bugs are hidden.
    """

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not result.errors:
            return
        request_id = str(self.execution_context.context.request_id)
        result.errors = [self._client_error(error, request_id) for error in result.errors]

    @staticmethod
    def _client_error(error: GraphQLError, request_id: str) -> GraphQLError:
        original = error.original_error
        if original is None or isinstance(original, GraphQLError):
            # Parse and validation errors, and variables that do not coerce (an unknown enum
            # value wraps a GraphQLError): the client's document or variables are wrong.
            extensions = {"code": Code.BAD_USER_INPUT.value, **(error.extensions or {})}
            return _with(error, error.message, extensions)
        if isinstance(original, Unavailable):
            log.warning("request %s: DynamoDB unavailable: %s (%s)", request_id, original, original.cause)
        expected = translate(original)
        if expected is not None:
            extensions = expected.extensions
            if expected.code in (Code.UNAVAILABLE, Code.TIMEOUT):
                extensions = {**extensions, "requestId": request_id}
            return _with(error, str(expected), extensions)
        if isinstance(original, ScopeViolation):
            log.error("request %s: tenant scope violation", request_id, exc_info=original)
        else:
            log.error("request %s: unexpected error", request_id, exc_info=original)
        return _with(
            error,
            f"internal error (request id {request_id})",
            {"code": Code.INTERNAL.value, "requestId": request_id},
        )


def _with(error: GraphQLError, message: str, extensions: dict[str, Any]) -> GraphQLError:
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
        extensions=extensions,
    )
