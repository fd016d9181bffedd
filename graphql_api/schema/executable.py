"""The executable schema: root types plus the extensions every request goes through."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType

from graphql_api.execution.errors import ErrorCodes, escaped_error
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.observability.operation import RecordOperation
from graphql_api.schema.mutation import Mutation
from graphql_api.schema.mutations.input_paths import INPUT_PATHS
from graphql_api.schema.query import Query
from graphql_api.schema.types.organization import BillingSubscription
from graphql_api.schema.types.scalars import SCALAR_OVERRIDES, fast_enum_output


class ApiSchema(strawberry.Schema):
    # Introspection off: errors carry no "Did you mean ...?" (errors.ErrorCodes); set by build_schema.
    hide_suggestions: bool = False

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

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        """Log nothing here: ErrorCodes (graphql_api/execution/errors.py) logs the bugs, once each.

        Strawberry's default logs every error with its stack trace at ERROR, expected ones
        (FORBIDDEN, NOT_FOUND, ...) included: one employee's directory query wrote ~120 KB.
        """


def build_schema(
    extensions: Sequence[type[SchemaExtension] | Callable[[], SchemaExtension]] = (),
    *,
    batch_max_operations: int = 0,
    hide_suggestions: bool = False,
) -> strawberry.Schema:
    """``batch_max_operations`` > 0 accepts a JSON array of that many operations; 0 refuses.
    ``hide_suggestions`` (introspection off) takes graphql-core's suggestions out of every error."""
    schema = ApiSchema(
        query=Query,
        mutation=Mutation,
        types=[BillingSubscription],
        scalar_overrides=SCALAR_OVERRIDES,
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
    the block out when the roots are named Query and Mutation; the file keeps it anyway, so
    a reader that guesses roots from type names (older graphql-core, Strawberry's printer,
    other SDL tools) still finds exactly the roots declared here and no subscription root.
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
