"""GraphQL errors with a machine-readable ``extensions.code``, and the masking of the rest.

Expected failures are raised as ``ApiError`` or are datastore errors, and ``translate`` is
the one place a datastore error becomes an API error. Datastore errors name datastore
fields; a mutation's are translated by ``InputErrors`` with its input's paths
(input_paths.py), so ``extensions.field`` is always ``input.<field>``. Anything else is a
bug, logged with its stack trace under a request id and shown to the client only as
INTERNAL with that id.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from enum import StrEnum
from typing import Any, Final, TypeVar

from graphql import GraphQLError
from strawberry.extensions import FieldExtension, SchemaExtension
from strawberry.extensions.field_extension import AsyncExtensionResolver
from strawberry.types import Info
from strawberry.types.base import get_object_definition

from datastore.errors import Conflict, DatastoreError, InvalidInput, NotFound, ScopeViolation, Unavailable
from graphql_api.observability.logging import FIELDS
from graphql_api.schema import input_paths
from graphql_api.schema.input_paths import InputPaths

T = TypeVar("T", bound=type)

log = logging.getLogger("hr.errors")


class Code(StrEnum):
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    BAD_USER_INPUT = "BAD_USER_INPUT"
    CONFLICT = "CONFLICT"
    # DynamoDB unreachable, throttling past the retries or not answering, or the server too
    # busy (MAX_CONCURRENT_REQUESTS): retry shortly (extensions.retryable).
    UNAVAILABLE = "UNAVAILABLE"
    # The request ran past its deadline (REQUEST_TIMEOUT_SECONDS): retry.
    TIMEOUT = "TIMEOUT"
    # The caller's organisation is past its share of work (extensions.retryAfter, seconds).
    RATE_LIMITED = "RATE_LIMITED"
    INTERNAL = "INTERNAL"


# A write whose answer was lost may have been applied; the same key makes the retry safe.
RETRY_SAME_KEY: Final = "the write may have been applied; retry with the same idempotencyKey to apply it exactly once"


class ApiError(Exception):
    def __init__(self, code: Code, message: str, **extensions: Any) -> None:
        super().__init__(message)
        self.code = code
        self.extensions = {"code": code.value, **extensions}


def bad_input(field: str, reason: str) -> ApiError:
    return ApiError(Code.BAD_USER_INPUT, f"{field}: {reason}", field=field)


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


def translate(error: BaseException, paths: InputPaths | None = None) -> ApiError | None:
    """The client-facing form of an expected error; None for a bug.

    ``paths`` places a datastore field in a mutation's input; without it (arguments of
    queries and connections) the field is named as the datastore named it.
    """
    if isinstance(error, ApiError):
        return error
    if isinstance(error, InvalidInput):
        field = error.field if paths is None else paths.path(error.field)
        return bad_input(field, error.reason)
    if isinstance(error, NotFound):
        return not_found(error.entity)
    if isinstance(error, Conflict):
        extensions = {} if error.current_version is None else {"currentVersion": error.current_version}
        return ApiError(Code.CONFLICT, str(error), **extensions)
    if isinstance(error, Unavailable):
        return unavailable(maybe_written=error.maybe_written)
    return None


class InputErrors(FieldExtension):
    """On every mutation field: its datastore errors translated with its input's paths.

    Only the mutation's own resolver runs inside; errors of the payload's fields (a
    connection's ``first``, say) are arguments of those fields and translated without paths.
    """

    async def resolve_async(self, next_: AsyncExtensionResolver, source: Any, info: Info, **kwargs: Any) -> Any:
        try:
            return await next_(source, info, **kwargs)
        except DatastoreError as error:
            translated = translate(error, input_paths.of(type(kwargs["input"])))
            if translated is None:
                raise
            raise translated from None


def translated_with_input_paths(mutation_type: T) -> T:
    """Class decorator over the root Mutation type: InputErrors on every one of its fields."""
    for field in get_object_definition(mutation_type, strict=True).fields:
        field.extensions.append(InputErrors())
    return mutation_type


# graphql-core's suggestions (pyutils.did_you_mean, and ScalarLeafsRule's own): " Did you mean
# 'organization'?", " Did you mean the enum value 'ACTIVE'?", " Did you mean 'me { ... }'?".
# Names never hold a "?", so one suggestion ends at the first. Apollo Server's
# ApolloServerPluginDisableSuggestions removes them with the same pattern.
_SUGGESTION = re.compile(r" ?Did you mean [^?]*\?")


def without_suggestions(message: str) -> str:
    """``message`` without graphql-core's "Did you mean ...?" suggestions of schema names."""
    return _SUGGESTION.sub("", message)


class ErrorCodes(SchemaExtension):
    """Gives every error a code; masks unexpected ones as INTERNAL with a request id.

    Strawberry's MaskErrors masks everything and drops extensions; here expected errors keep
    their code and details, and only bugs are hidden. With ``hide_suggestions`` (introspection
    off) the client's errors lose graphql-core's suggestions, which would otherwise map the
    schema one guess at a time. graphql-core 3.3 can leave them out itself
    (``hide_suggestions`` of ``validate`` and ``execute``), but Strawberry passes neither, and
    Strawberry's own ``disable_field_suggestions`` covers field names only (not arguments,
    enum values, input fields or types); this one translation sees every error.
    """

    def __init__(self, *, hide_suggestions: bool = False) -> None:
        self.hide_suggestions = hide_suggestions

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not result.errors:
            return
        request_id = str(self.execution_context.context.request_id)
        result.errors = [
            self.client_error(error, request_id, hide_suggestions=self.hide_suggestions) for error in result.errors
        ]

    @staticmethod
    def client_error(error: GraphQLError, request_id: str, *, hide_suggestions: bool = False) -> GraphQLError:
        original = error.original_error
        if original is None or isinstance(original, GraphQLError):
            # Parse and validation errors, and variables that do not coerce (an unknown enum
            # value wraps a GraphQLError): the client's document or variables are wrong.
            extensions = {"code": Code.BAD_USER_INPUT.value, **(error.extensions or {})}
            message = without_suggestions(error.message) if hide_suggestions else error.message
            return _with(error, message, extensions)
        if isinstance(original, Unavailable):
            log.warning("request %s: DynamoDB unavailable: %s (%s)", request_id, original, original.cause)
        expected = translate(original)
        if expected is not None:
            extensions = expected.extensions
            if expected.code in (Code.UNAVAILABLE, Code.TIMEOUT):
                extensions = {**extensions, "requestId": request_id}
            return _with(error, str(expected), extensions)
        # The request id as a field of the log line too (LOG_FORMAT=json), beside the access line's.
        fields = {FIELDS: {"requestId": request_id}}
        if isinstance(original, ScopeViolation):
            log.error("request %s: tenant scope violation", request_id, exc_info=original, extra=fields)
        else:
            log.error("request %s: unexpected error", request_id, exc_info=original, extra=fields)
        return _with(
            error,
            f"internal error (request id {request_id})",
            {"code": Code.INTERNAL.value, "requestId": request_id},
        )


def escaped_error(error: GraphQLError, request_id: str, *, hide_suggestions: bool = False) -> GraphQLError:
    """``error`` if it has its code; else it escaped ErrorCodes, and is masked (and logged) now."""
    if (error.extensions or {}).get("code") is not None:
        return error
    return ErrorCodes.client_error(error, request_id, hide_suggestions=hide_suggestions)


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
