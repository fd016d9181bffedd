"""MAX_QUERY_COST: a query that costs more (execution/query_cost.py) is refused before it runs.

The cost is the operation's document analysis (execution/documents.py), worked out once per
document, operation and the values of the variables it reads; it is left on the operation's
record for TenantRate to charge (limits/tenant_rate.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import GraphQLError
from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension

from graphql_api.execution.analysis import Analysis, analyse
from graphql_api.execution.introspection_cost import PastCeiling
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.operation import operation_of


class MaxCost(SchemaExtension):
    def __init__(self, max_cost: int) -> None:
        self.max_cost = max_cost

    def on_execute(self) -> Iterator[None]:
        execution = self.execution_context
        if execution.result is None and execution.graphql_document is not None:
            try:
                analysis = self._analysis()
            except PastCeiling:
                execution.result = self._refusal(f"more than {self.max_cost}", {})
            else:
                if analysis.cost > self.max_cost:
                    execution.result = self._refusal(str(analysis.cost), {"cost": analysis.cost})
        yield

    def _analysis(self) -> Analysis:
        """The operation's cost, from its document's analyses (worked out here for an operation
        without them), left on its record."""
        execution = self.execution_context
        schema = graphql_schema(execution.schema)
        run = operation_of(execution)
        if run is not None and run.analyses is not None:
            found = run.analyses.analysis(schema, execution.variables, self.max_cost)
        else:
            assert execution.graphql_document is not None
            found = analyse(
                schema, execution.graphql_document, execution.variables, execution.operation_name, self.max_cost
            )
        if run is not None:
            run.analysis = found
        return found

    def _refusal(self, cost: str, extensions: dict[str, Any]) -> GraphQLExecutionResult:
        error = GraphQLError(
            f"the query costs {cost}; at most {self.max_cost} is allowed "
            "(every object and value it can return counts; ask for less with `first`)",
            extensions={"limit": "cost", **extensions, "maxCost": self.max_cost},
        )
        return GraphQLExecutionResult(data=None, errors=[error])
