"""The seam: a query with a plan is executed by it instead of graphql-core.

Strawberry runs graphql-core's ``execute`` only when no extension has set a result by the
time every ``on_execute`` hook has reached its ``yield``. This extension is the last of the
schema's extensions: the limits, the caller's active check (which watches for the first
tenant access during execution), error codes and cost run around it exactly as they run
around graphql-core, and only the field walk is replaced. Anything without a plan (a
mutation, introspection, a variable that does not coerce) is left to graphql-core. No
extension of this schema defines a per-field ``resolve`` hook, which a plan would bypass
(tests/graphql_api/execution/plan/test_extension.py checks that).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from graphql_api.execution.documents import Documents
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.operation import operation_of
from graphql_api.execution.plan.runner import run_plan


class CompiledPlans(SchemaExtension):
    def __init__(self, documents: Documents) -> None:
        super().__init__()
        self.documents = documents

    async def on_execute(self) -> AsyncIterator[None]:
        execution = self.execution_context
        document = execution.graphql_document
        run = operation_of(execution)
        analyses = None if run is None else run.analyses
        if (
            execution.result is None
            and document is not None
            and analyses is not None
            and execution.operation_type is OperationType.QUERY
        ):
            schema = graphql_schema(execution.schema)
            executor = execution.schema.execution_context_class.build(
                schema,
                document,
                execution.root_value,
                execution.context,
                execution.variables,
                execution.operation_name,
                # Strawberry's predicate, as Strawberry passes it to graphql-core (typed bool, not TypeGuard).
                is_awaitable=optimized_is_awaitable,  # type: ignore[arg-type]
                operation_extensions=execution.operation_extensions,
            )
            # Each (document, operation, @skip/@include values) is compiled once (execution/documents.py).
            if isinstance(executor, list):
                self.documents.fallbacks += 1
            else:
                try:
                    plan = analyses.plan(schema, executor)
                    if plan is None:
                        self.documents.fallbacks += 1
                    else:
                        self.documents.planned_runs += 1
                        data, errors = await run_plan(plan, executor, execution.root_value)
                        execution.result = GraphQLExecutionResult(data, errors or None)
                finally:
                    # graphql-core's executor holds bound methods of itself (async_helpers): a
                    # cycle through the request's context, its session, scope and budgets (107
                    # objects a Q3, 154 a Q1, ``python -m bench.garbage``). Broken once the plan
                    # has run, or once it is known there is none (graphql-core then builds its
                    # own), a planned query leaves nothing to the cyclic collector and a fallback
                    # only graphql-core's own executor (test_extension.py).
                    del executor.async_helpers
        yield
