"""A document with several operations needs ``operationName``: without it nothing runs.

Strawberry runs the first operation when none is named; the GraphQL spec (GetOperation)
calls that a request error, and running one a client did not choose could write. Checked
before validation on every request (parsed documents are cached, the choice is not).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError, OperationDefinitionNode
from strawberry.extensions import SchemaExtension

from graphql_api.execution.operation import operation_of
from graphql_api.http.errors import TransportCode


class OperationNameRequired(SchemaExtension):
    def on_validate(self) -> Iterator[None]:
        self._check()
        yield

    def _check(self) -> None:
        # Before validation (errors set here skip it and refuse the request): after it,
        # Strawberry has already decided to execute.
        execution = self.execution_context
        document = execution.graphql_document
        # Strawberry's ``operation_name`` falls back to the first operation's name: what the
        # client sent is on the operation's own record (execution/operation.py).
        run = operation_of(execution)
        if run is None or run.sent_name is not None or document is None or execution.pre_execution_errors:
            return
        operations = sum(isinstance(node, OperationDefinitionNode) for node in document.definitions)
        if operations > 1:
            execution.pre_execution_errors = [
                GraphQLError(
                    "the document has several operations: name the one to run with operationName",
                    extensions={"code": TransportCode.BAD_REQUEST.value},
                )
            ]
