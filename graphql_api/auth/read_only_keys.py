"""An API key given the EMPLOYEE role reads the directory and never writes: no mutation runs.

Refused here, once, for the whole operation, before any resolver or datastore call, rather
than left to each mutation's own role rule: a mutation added later that lets employees write
(applying to a job, say) stays closed to read-only keys without anyone remembering to.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError
from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from datastore.kinds.entities import Role
from graphql_api.execution.errors import forbidden


class ReadOnlyKeys(SchemaExtension):
    def on_execute(self) -> Iterator[None]:
        execution = self.execution_context
        principal = getattr(execution.context, "principal", None)
        if (
            execution.result is None
            and execution.operation_type is not OperationType.QUERY
            and principal is not None
            and principal.api_key
            and principal.role is not Role.ADMIN
        ):
            refused = forbidden("an API key with the EMPLOYEE role is read-only: it runs no mutation")
            execution.result = GraphQLExecutionResult(
                data=None, errors=[GraphQLError(str(refused), extensions=refused.extensions)]
            )
        yield
