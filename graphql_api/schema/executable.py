"""The executable schema: root types plus the extensions every request goes through."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import Any

import strawberry
from graphql import (
    GraphQLError,
    GraphQLSchema,
    SchemaDefinitionNode,
    build_client_schema,
    introspection_from_schema,
    lexicographic_sort_schema,
    parse,
    print_schema,
)
from strawberry.extensions import SchemaExtension
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType
from strawberry.utils.aio import aclosing

from graphql_api.execution.errors import ErrorCodes, escaped_error
from graphql_api.execution.hooks import HookRunner
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.http.errors import TransportCode
from graphql_api.observability.operation import RecordOperation
from graphql_api.schema.event_executor import PerEventMemo
from graphql_api.schema.mutation import Mutation
from graphql_api.schema.mutations.input_paths import INPUT_PATHS
from graphql_api.schema.query import Query
from graphql_api.schema.subscription import Subscription
from graphql_api.schema.types.organization import BillingSubscription
from graphql_api.schema.types.scalars import SCALAR_OVERRIDES, fast_enum_output
from graphql_api.subscriptions.edge import RefusedBeforeRunning


class ApiSchema(strawberry.Schema):
    # Introspection off: errors carry no "Did you mean ...?" (errors.ErrorCodes); set by build_schema.
    hide_suggestions: bool = False

    def create_extensions_runner(
        self, execution_context: ExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        """Strawberry's runner with each extension class's hooks wrapped once (execution/hooks.py)."""
        return HookRunner(execution_context=execution_context, extensions=extensions)

    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        """Strawberry's execution, with errors that escaped the extensions masked too.

        An exception raised in an extension hook (a bug surfacing in the caller's active check,
        say) ends the operation before ErrorCodes sees the result: Strawberry then builds the
        error from the exception's text. Such errors have no code; they are bugs, handled here
        exactly as ErrorCodes handles a bug in a resolver.
        """
        result = await super().execute(
            query,
            variable_values,
            context_value,
            root_value,
            operation_name,
            allowed_operation_types,
            operation_extensions,
        )
        if result.errors:
            request_id = str(getattr(context_value, "request_id", None))
            result.errors = [
                escaped_error(error, request_id, hide_suggestions=self.hide_suggestions) for error in result.errors
            ]
        return result

    async def stream(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        operation_extensions: dict[str, Any] | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
    ) -> AsyncGenerator[Any, None]:
        """Strawberry's streaming execution (subscriptions), each result's errors translated.

        ErrorCodes translates a result when its operation ends, which for a subscription is
        after its last event: each event's result is translated here instead, as ``execute``
        masks what escaped. A refusal before running (RefusedBeforeRunning) is its own result;
        another operation than a subscription over a subscription transport is BAD_REQUEST.
        """
        results = await super().stream(
            query,
            variable_values,
            context_value,
            root_value,
            operation_name,
            operation_extensions,
            allowed_operation_types,
        )
        request_id = str(getattr(context_value, "request_id", None))
        hide = self.hide_suggestions

        async def translated() -> AsyncGenerator[Any, None]:
            async with aclosing(results):
                async for streamed in results:
                    result: Any = streamed
                    errors = list(getattr(result, "errors", None) or ())
                    refused = next((e.original_error for e in errors if _refused(e)), None)
                    if isinstance(refused, RefusedBeforeRunning):
                        errors = list(refused.result.errors or ())
                        result = PreExecutionError(data=None, errors=errors)
                    elif any(isinstance(e.original_error, InvalidOperationTypeError) for e in errors):
                        code = {"code": TransportCode.BAD_REQUEST.value}
                        errors = [GraphQLError(ONLY_SUBSCRIPTIONS, extensions=code)]
                        result = PreExecutionError(data=None, errors=errors)
                    if errors:
                        result.errors = [
                            ErrorCodes.client_error(error, request_id, hide_suggestions=hide)
                            if (error.extensions or {}).get("code") is None
                            else error
                            for error in errors
                        ]
                    yield result

        return translated()

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        """Log nothing here: ErrorCodes (graphql_api/execution/errors.py) logs the bugs, once each.

        Strawberry's default logs every error with its stack trace at ERROR, expected ones
        (FORBIDDEN, NOT_FOUND, ...) included: one employee's directory query wrote ~120 KB.
        """


ONLY_SUBSCRIPTIONS = "only subscriptions are served here: send queries and mutations with POST /graphql"


def _refused(error: GraphQLError) -> bool:
    return isinstance(error.original_error, RefusedBeforeRunning)


def build_schema(
    extensions: Sequence[type[SchemaExtension] | Callable[[], SchemaExtension]] = (),
    *,
    batch_max_operations: int = 0,
    hide_suggestions: bool = False,
    query: type[Query] = Query,
) -> strawberry.Schema:
    """``batch_max_operations`` > 0 accepts a JSON array of that many operations; 0 refuses.
    ``hide_suggestions`` (introspection off) takes graphql-core's suggestions out of every error.
    ``query``: the root query type; tests give a subclass with members of their own (one marked
    ``@deprecated``, which the product's schema has none of yet)."""
    schema = ApiSchema(
        query=query,
        mutation=Mutation,
        subscription=Subscription,
        types=[BillingSubscription],
        scalar_overrides=SCALAR_OVERRIDES,
        # Each subscription event memoizes into its own dict, not the subscription's (event_executor.py).
        execution_context_class=PerEventMemo,
        # RecordOperation before ErrorCodes: it leaves the operation last and sees client codes.
        extensions=[
            RecordOperation,
            lambda: ErrorCodes(hide_suggestions=hide_suggestions, input_paths=INPUT_PATHS),
            *extensions,
        ],
        config=StrawberryConfig(
            auto_camel_case=True,
            batching_config={"max_operations": batch_max_operations} if batch_max_operations else None,
        ),
    )
    schema.hide_suggestions = hide_suggestions
    fast_enum_output(graphql_schema(schema))
    return schema


def schema_sdl() -> str:
    """The schema in SDL, as committed in schema.graphql: what introspection of it says.

    Going through introspection (rather than printing Strawberry's schema objects) gives
    exactly what clients see, with default values as introspection writes them.
    """
    introspected = build_client_schema(introspection_from_schema(graphql_schema(build_schema())))
    return sdl_of(introspected)


def sdl_of(schema: GraphQLSchema) -> str:
    """``schema`` with an explicit ``schema {}`` block, then every definition sorted by name.

    Sorted, the file prints exactly as ``print_schema(lexicographic_sort_schema(...))`` of an
    introspected schema does, so diffs and code generators see no churn. graphql-core leaves
    the block out when the roots are named Query, Mutation and Subscription; the file keeps it
    anyway, so a reader that guesses roots from type names (older graphql-core, Strawberry's
    printer, other SDL tools) still finds exactly the roots declared here.
    """
    ordered = lexicographic_sort_schema(schema)
    printed = print_schema(ordered)
    if any(isinstance(definition, SchemaDefinitionNode) for definition in parse(printed).definitions):
        return printed + "\n"  # graphql-core wrote the block itself (a description, uncommon names)
    roots = [
        (operation, root.name)
        for operation, root in (
            ("query", ordered.query_type),
            ("mutation", ordered.mutation_type),
            ("subscription", ordered.subscription_type),
        )
        if root is not None
    ]
    if not roots:
        return printed + "\n"
    block = "schema {\n" + "".join(f"  {operation}: {name}\n" for operation, name in roots) + "}"
    return f"{block}\n\n{printed}\n"
