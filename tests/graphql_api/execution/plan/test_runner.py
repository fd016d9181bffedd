"""The runner on a schema of its own: what the API's schema cannot show today."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest
import strawberry
from graphql import ExecutionResult, Undefined, parse
from graphql.execution import Executor, execute
from graphql.execution.values import get_variable_values
from graphql.pyutils import Path

from datastore.kinds.entities import Role
from graphql_api.execution.fields import Deferred, loaded
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.plan import runner
from graphql_api.execution.plan.compiler import compile_operation
from graphql_api.execution.plan.runner import _path, run_plan

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


def test_path__made_without_namedtuples_new__is_graphql_cores_path() -> None:
    root = Path(None, "organization", "Query")
    made = _path(Path, (root, "name", "Organization"))
    assert type(made) is Path and made == Path(root, "name", "Organization")
    assert made.as_list() == ["organization", "name"] and _path(Path, (made, 0, None)) == made.add_key(0)


class _Awaits:
    def __await__(self) -> Any:
        yield None


class _Forwards:
    def __getattr__(self, name: str) -> Any:
        return name


class _Dict:
    pass


class _Intercepts:
    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        return name


class _Pretends:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return asyncio.Future


@strawberry.type
class _Declared:
    name: str


@pytest.mark.parametrize(
    ("kind", "plain"),
    [
        (_Declared, True),  # its __dict__ holds its declared fields, never __await__
        (Role, True),  # a StrEnum: members made with the class
        (_Intercepts, False),
        (_Awaits, False),
        (_Forwards, False),  # hasattr(value, "__await__") is its own answer
        (_Dict, False),  # an instance's __dict__ could hold __await__
        (_Pretends, False),
        (ValueError, False),
        (Deferred, False),
        (type(Undefined), False),
    ],
)
def test_learn__plain_only_when_no_value_of_the_type_is_awaitable_exception_undefined_or_deferred(
    kind: type, plain: bool
) -> None:
    assert runner._learn(kind) is plain
    assert (
        datetime in runner._PLAIN
    )  # known from the start    assert (kind in runner._PLAIN) is plain and (kind in runner._NOT_PLAIN) is not plain


@strawberry.interface
class _Node:
    id: str


@strawberry.type
class _Cat(_Node):
    name: str


@strawberry.type
class _Dog(_Node):
    name: str


class _Kitten(_Cat):
    pass


@strawberry.type
class _Animals:
    @strawberry.field
    def cats(self) -> list[_Cat | None]:
        return [
            _Cat(id="1", name="plain"),
            strawberry.cast(_Dog, _Cat(id="2", name="cast to another type")),
            strawberry.cast(_Cat, _Cat(id="3", name="cast to its own")),
            _Kitten(id="4", name="a subclass"),
            # Strawberry's check passes any instance of the type's interfaces too.
            _Dog(id="5", name="another type of its interface"),  # type: ignore[list-item]
        ]


async def _planned_and_general(schema: strawberry.Schema, query: str) -> tuple[ExecutionResult, ExecutionResult]:
    core = graphql_schema(schema)
    document = parse(query)
    executor = Executor.build(core, document, None, None)
    assert not isinstance(executor, list)
    plan = compile_operation(core, document.definitions[0], {}, get_variable_values(core, [], {}))  # type: ignore[arg-type]  # a query
    data, errors = await run_plan(plan, executor, None)
    general = execute(core, document)
    assert isinstance(general, ExecutionResult)  # the resolvers are synchronous
    return ExecutionResult(data, errors or None), general


def test_strawberry_type_check__exact_class_cast_or_subclass__same_answer_as_graphql_core() -> None:
    """The runner passes an uncast instance of exactly the type's class without calling the
    check; cast values, subclasses and other types still get the check's own answer."""
    schema = strawberry.Schema(_Animals, types=[_Dog])
    planned, general = asyncio.run(_planned_and_general(schema, "{ cats { id name } }"))
    assert planned.data == general.data
    assert planned.data == {
        "cats": [
            {"id": "1", "name": "plain"},
            None,
            {"id": "3", "name": "cast to its own"},
            {"id": "4", "name": "a subclass"},
            {"id": "5", "name": "another type of its interface"},
        ]
    }
    assert [(e.message, e.path) for e in planned.errors or []] == [(e.message, e.path) for e in general.errors or []]
    assert [e.path for e in planned.errors or []] == [["cats", 1]]
