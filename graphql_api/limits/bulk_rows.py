"""Maximum rows of a bulk mutation (``importEmployees``): 100, refused before anything runs.

A bulk field is one whose ``input`` argument has a ``rows`` list. Its rows are counted in the
document (literal or variables) after validation and before execution, like the query cost,
so a refused import makes no DynamoDB call at all (not even the caller's active check) and
writes nothing. The rows are counted by graphql_api/execution/rows.py, which the query cost
multiplies a bulk field by too.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import FieldNode, GraphQLError, OperationDefinitionNode
from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension

from datastore.tenants.onboarding import MAX_ROWS
from graphql_api.execution.rows import input_rows

ROWS_FIELD = "input.rows"


def _root_fields(operation: OperationDefinitionNode) -> Iterator[FieldNode]:
    # Bulk fields are root mutation fields; fragments cannot hold a mutation's root fields
    # with arguments any other way than inline, so only direct fields are looked at.
    for selection in operation.selection_set.selections:
        if isinstance(selection, FieldNode):
            yield selection


class MaxRows(SchemaExtension):
    """BAD_USER_INPUT (``input.rows``) for a bulk field of more than MAX_ROWS rows."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is not None and context.result is None:
            variables = context.variables or {}
            for operation in document.definitions:
                if not isinstance(operation, OperationDefinitionNode):
                    continue
                if context.operation_name is not None and (
                    operation.name is None or operation.name.value != context.operation_name
                ):
                    continue
                for field in _root_fields(operation):
                    count = input_rows(field, variables)
                    if count is not None and count > MAX_ROWS:
                        context.result = GraphQLExecutionResult(data=None, errors=[too_many(count)])
                        break
        yield


def too_many(count: int) -> GraphQLError:
    return GraphQLError(
        f"{ROWS_FIELD}: at most {MAX_ROWS} rows per request, got {count}; send the rest in another request",
        extensions={"code": "BAD_USER_INPUT", "field": ROWS_FIELD, "limit": "rows", "maxRows": MAX_ROWS},
    )
