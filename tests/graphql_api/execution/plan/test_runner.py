"""The runner on a schema of its own: what the API's schema cannot show today."""

from __future__ import annotations

import asyncio
from typing import Any

import strawberry
from graphql import ExecutionResult, parse
from graphql.execution import Executor, execute
from graphql.execution.values import get_variable_values

from graphql_api.execution.fields import Deferred, loaded
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.plan.compiler import compile_operation
from graphql_api.execution.plan.runner import run_plan

QUERY = "{ loaded boom }"


class Batch:
    """One loader batch: the values it gave, and how often a field took its value."""

    def __init__(self) -> None:
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(self.ready.set_result, None)
        self.taken = 0

    def value(self) -> str:
        self.taken += 1
        return "loaded"


def _load(context: dict[str, Any], _arguments: dict[str, Any]) -> Deferred:
    batch: Batch = context["batch"]
    return Deferred(batch.ready, batch.value)


@strawberry.type
class Query:
    # Before the failing field, so its Deferred is already waiting when that field raises.
    loaded = loaded(_load, returns=str | None, description="A batch's value.")

    @strawberry.field
    def boom(self) -> str:
        raise ValueError("boom")


async def _both() -> tuple[ExecutionResult, Batch, ExecutionResult]:
    schema = graphql_schema(strawberry.Schema(Query))
    document = parse(QUERY)
    planned_batch, general_batch = Batch(), Batch()
    executor = Executor.build(schema, document, None, {"batch": planned_batch})
    assert not isinstance(executor, list)
    variables = get_variable_values(schema, [], {})
    plan = compile_operation(schema, document.definitions[0], {}, variables)  # type: ignore[arg-type]  # a query
    assert plan.root.fields[0].load is not None  # the runner takes the declared load
    data, errors = await run_plan(plan, executor, None)
    general = execute(schema, document, context_value={"batch": general_batch})
    if not isinstance(general, ExecutionResult):  # graphql-core answers at once when the root fails
        general = await general
    return ExecutionResult(data, errors or None), planned_batch, general


def test_deferred_field__non_null_sibling_fails__same_answer_and_its_batch_still_read() -> None:
    planned, planned_batch, general = asyncio.run(_both())
    assert planned.data is None and general.data is None
    assert [e.message for e in planned.errors or []] == [e.message for e in general.errors or []] == ["boom"]
    # The field waiting on the batch was completed (into data then nulled), not dropped: a
    # read a Deferred started is never left unawaited.
    assert planned_batch.taken == 1
