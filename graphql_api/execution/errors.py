"""GraphQL errors with a machine-readable ``extensions.code``, and the masking of the rest.

Expected failures are raised as ``ApiError`` (by the edge that refuses a request: an id
that is no id, a caller without the role) or are datastore errors, and ``translate`` is the
one place a datastore error becomes an API error, with its code and, for a refused value,
its place in the request. Datastore errors name the datastore's own fields (``first_name``,
``department_id``); the error of a mutation's own field is placed in its input by the
mutation's row of the table in graphql_api/schema/mutations/input_paths.py, so
``extensions.field`` is ``input.<field>``; arguments of queries and connections (``first``,
``after``, ``search``, ``email``) are named as the datastore names them. Anything else is a
bug, logged with its stack trace under a request id and shown to the client only as
INTERNAL with that id.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import Any, Final

from graphql import FieldNode, GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from datastore.errors import Conflict, Field, InProgress, InvalidInput, NotFound, ScopeViolation, Unavailable
from datastore.kinds.entities import ApiKey, Application, Department, Employee, JobPosting, Organization
from graphql_api.log_output import FIELDS

FieldPaths = Mapping[Field, str]
"""Where each datastore field sits in one request (``input.firstName``); see ``translate``."""

# A datastore field a mutation's input does not carry: the input as a whole is at fault.
INPUT: Final = "input"

# The GraphQL type each datastore entity is exposed as: NOT_FOUND names it.
TYPE_NAMES: Final[Mapping[type[Any], str]] = {
    Organization: "Organization",
    Department: "Department",
    Employee: "Employee",
    JobPosting: "JobPosting",
    Application: "Application",
    ApiKey: "ApiKey",
}

log = logging.getLogger("hr.errors")


class Code(StrEnum):
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    BAD_USER_INPUT = "BAD_USER_INPUT"
    # The document is not GraphQL (a syntax error), or not valid against this schema (an
    # unknown field, a missing argument): Apollo Server's codes, which its clients and tooling
    # know. Nothing ran. A limit that refuses a document which parses and validates (tokens,
    # depth, aliases, cost, rows) is BAD_USER_INPUT with ``extensions.limit`` instead.
    GRAPHQL_PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
    GRAPHQL_VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
    CONFLICT = "CONFLICT"
    # DynamoDB unreachable, throttling past the retries or not answering, or the server too
    # busy (MAX_CONCURRENT_REQUESTS): retry shortly (extensions.retryable).
    UNAVAILABLE = "UNAVAILABLE"
    # The request ran past its deadline (REQUEST_TIMEOUT_SECONDS): retry.
    TIMEOUT = "TIMEOUT"
    # The caller's organisation is past its share of work (extensions.retryAfter, seconds).
    RATE_LIMITED = "RATE_LIMITED"
    INTERNAL = "INTERNAL"


class AuthReason(StrEnum):
    """``extensions.reason`` of UNAUTHENTICATED: what the client does next."""

    # No credential was sent, and the field needs one: sign in.
    TOKEN_MISSING = "TOKEN_MISSING"
    # The access token was valid but its time is up: get a new one (refresh), then retry.
    TOKEN_EXPIRED = "TOKEN_EXPIRED"
    # The credential is not one of ours (malformed, forged, another issuer or audience, an
    # unknown or revoked API key): do not retry it; sign in again.
    TOKEN_INVALID = "TOKEN_INVALID"
    # The token's role is no longer the employee's: a new token carries the new one.
    ROLE_CHANGED = "ROLE_CHANGED"
    # The employee or the organisation is no longer active: a new token will not help.
    ACCOUNT_INACTIVE = "ACCOUNT_INACTIVE"


# A write whose answer was lost may have been applied; the same key makes the retry safe.
# extensions.reason of UNAVAILABLE when another attempt under the idempotency key is in flight.
IN_PROGRESS: Final = "IN_PROGRESS"
RETRY_SAME_KEY: Final = "the write may have been applied; retry with the same idempotencyKey to apply it exactly once"


class ApiError(Exception):
    def __init__(self, code: Code, message: str, **extensions: Any) -> None:
        super().__init__(message)
        self.code = code
        self.extensions = {"code": code.value, **extensions}


def bad_input(field: str, reason: str) -> ApiError:
    return ApiError(Code.BAD_USER_INPUT, f"{field}: {reason}", field=field)


def unauthenticated(message: str, reason: AuthReason) -> ApiError:
    return ApiError(Code.UNAUTHENTICATED, message, reason=reason.value)


def token_missing() -> ApiError:
    """A field that needs a caller, asked for without a credential."""
    return unauthenticated("authentication required: send Authorization: Bearer <token>", AuthReason.TOKEN_MISSING)


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


def in_progress() -> ApiError:
    """Another attempt under the mutation's idempotency key has not committed yet."""
    return ApiError(
        Code.UNAVAILABLE,
        "the first attempt with this idempotencyKey is still being written; retry with the same idempotencyKey "
        "for its answer",
        retryable=True,
        maybeWritten=True,
        reason=IN_PROGRESS,
    )


def timeout(seconds: float, *, maybe_written: bool = False) -> ApiError:
    """The request's deadline passed; what was not sent never will be."""
    message = f"the request did not finish within its {seconds:g} s deadline"
    if maybe_written:
        return ApiError(Code.TIMEOUT, f"{message}; {RETRY_SAME_KEY}", retryable=True, maybeWritten=True)
    return ApiError(Code.TIMEOUT, f"{message}; retry", retryable=True)


def translate(error: BaseException, paths: FieldPaths | None = None) -> ApiError | None:
    """The client-facing form of an expected error; None for a bug.

    ``paths`` places a datastore field in a mutation's input (one it does not list: the
    input as a whole); without it (arguments of queries and connections) the field is named
    as the datastore named it.
    """
    if isinstance(error, ApiError):
        return error
    if isinstance(error, InvalidInput):
        field = error.field if paths is None else paths.get(error.field, INPUT)
        return bad_input(field, error.reason)
    if isinstance(error, NotFound):
        return not_found(TYPE_NAMES.get(error.entity, error.entity.__name__))
    if isinstance(error, Conflict):
        extensions = {} if error.current_version is None else {"currentVersion": error.current_version}
        return ApiError(Code.CONFLICT, str(error), **extensions)
    if isinstance(error, InProgress):
        return in_progress()
    if isinstance(error, Unavailable):
        return unavailable(maybe_written=error.maybe_written)
    return None


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

    ``input_paths`` holds each mutation's FieldPaths, by the mutation's field name: an error
    of a mutation's own field (its path is that field alone) is translated with them.

    The client's own errors are coded by where they arose: a document that does not parse is
    GRAPHQL_PARSE_FAILED, one that does not validate GRAPHQL_VALIDATION_FAILED (the phase is
    noted by the parse and validate hooks, not guessed from messages), and variables that do
    not coerce, like every input a resolver refuses, BAD_USER_INPUT. An error that brings its
    own code keeps it, and a limit's refusal (``extensions.limit``) is BAD_USER_INPUT in
    whichever phase it is raised: the document is valid, it asks for too much.
    """

    def __init__(self, *, hide_suggestions: bool = False, input_paths: Mapping[str, FieldPaths] | None = None) -> None:
        self.hide_suggestions = hide_suggestions
        self.input_paths = input_paths or {}
        # The code of the phase that refused the document, if parsing or validation did.
        self.refused_by: Code | None = None

    def on_parse(self) -> Iterator[None]:
        yield
        if self.execution_context.pre_execution_errors:
            self.refused_by = Code.GRAPHQL_PARSE_FAILED

    def on_validate(self) -> Iterator[None]:
        yield
        if self.refused_by is None and self.execution_context.pre_execution_errors:
            self.refused_by = Code.GRAPHQL_VALIDATION_FAILED

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not result.errors:
            return
        request_id = str(self.execution_context.context.request_id)
        result.errors = [
            self.client_error(
                error,
                request_id,
                hide_suggestions=self.hide_suggestions,
                paths=self._mutation_paths(error),
                refused_by=self.refused_by,
            )
            for error in result.errors
        ]

    def _mutation_paths(self, error: GraphQLError) -> FieldPaths | None:
        """The paths of the mutation whose own field failed with ``error``; None for any other."""
        if error.path is None or len(error.path) != 1 or not error.nodes or not isinstance(error.nodes[0], FieldNode):
            return None
        paths = self.input_paths.get(error.nodes[0].name.value)  # the field's name, whatever its alias
        if paths is None or self.execution_context.operation_type is not OperationType.MUTATION:
            return None
        return paths

    @staticmethod
    def client_error(
        error: GraphQLError,
        request_id: str,
        *,
        hide_suggestions: bool = False,
        paths: FieldPaths | None = None,
        refused_by: Code | None = None,
    ) -> GraphQLError:
        original = error.original_error
        if original is None or isinstance(original, GraphQLError):
            # Parse and validation errors (``refused_by`` their phase), and variables that do
            # not coerce (an unknown enum value wraps a GraphQLError): the client's document or
            # variables are wrong.
            own = error.extensions or {}
            code = Code.BAD_USER_INPUT if refused_by is None or "limit" in own else refused_by
            extensions = {"code": code.value, **own}
            message = without_suggestions(error.message) if hide_suggestions else error.message
            return _with(error, message, extensions)
        if isinstance(original, Unavailable):
            log.warning("request %s: DynamoDB unavailable: %s (%s)", request_id, original, original.cause)
        expected = translate(original, paths)
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
