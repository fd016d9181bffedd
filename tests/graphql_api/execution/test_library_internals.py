"""What the executors take from Strawberry, graphql-core and aiodataloader beyond their documented API.

One test per reliance, named for it, so an upgrade that moves it fails here, loudly and by
name, rather than as a wrong answer somewhere else. Written against strawberry-graphql
0.341.2, graphql-core 3.3.2 and aiodataloader 0.4.3 (the versions the lock file pins).

Three private names remain, each behind one function of graphql_api/execution/library_internals.py:
Strawberry's ``Schema._schema`` and ``Info._raw_info``, and aiodataloader's
``DataLoader._queue``. The rest are behaviours of public names that the compiled plans count
on: Strawberry's generated ``is_type_of`` never reads its info and passes an instance of its
class (the runner skips it for one of exactly that class not ``strawberry.cast``, whose
attribute is ``strawberry.types.cast.TYPE_CAST_ATTRIBUTE``); Strawberry's own ``resolve_type``
for an interface names an uncast value by its class (the runner resolves such a value by its
class itself); a field Strawberry resolves by
attribute (``is_default_resolver``) neither; and the runner's own error for a refused object
type is graphql-core's, word for word.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import strawberry
from aiodataloader import DataLoader
from graphql import (
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLSchema,
    GraphQLString,
    graphql,
    parse,
)
from graphql.execution import Executor
from strawberry.resolvers import is_default_resolver
from strawberry.types.base import StrawberryObjectDefinition
from strawberry.types.cast import TYPE_CAST_ATTRIBUTE

from graphql_api.execution.library_internals import dataloader_queue, graphql_schema, resolve_info
from graphql_api.execution.plan.compiler import (
    ObjectPlan,
    _resolved_by_class,
    _strawberry_type_check,
    compile_operation,
)
from graphql_api.execution.plan.runner import run_plan
from graphql_api.schema.executable import build_schema

SCHEMA = build_schema()
GRAPHQL_SCHEMA = graphql_schema(SCHEMA)


def _executed(query: str) -> tuple[strawberry.Schema, list[GraphQLResolveInfo[Any]]]:
    """A small Strawberry schema, ``query`` run on it, and the resolve info its field was given."""
    seen: list[GraphQLResolveInfo[Any]] = []

    @strawberry.type
    class Query:
        @strawberry.field
        def here(self, info: strawberry.Info) -> str:
            raw = resolve_info(info)
            seen.append(raw)
            return raw.field_nodes[0].name.value

    schema = strawberry.Schema(query=Query)
    result = schema.execute_sync(query)
    assert result.errors is None and result.data == {"here": "here"}
    return schema, seen


def test_strawberry_schema__private__schema__is_the_graphql_core_schema_it_executes() -> None:
    schema, seen = _executed("{ here }")
    assert isinstance(schema._schema, GraphQLSchema)
    assert graphql_schema(schema) is schema._schema
    assert seen[0].schema is graphql_schema(schema)


def test_strawberry_info__private__raw_info__is_graphql_cores_resolve_info() -> None:
    """With the field's nodes, the operation and the document's fragments (connection.py reads them)."""
    _schema, seen = _executed("query Q { ...F } fragment F on Query { here }")
    (raw,) = seen
    assert [node.name.value for node in raw.field_nodes] == ["here"]
    assert raw.operation.name is not None and raw.operation.name.value == "Q"
    assert set(raw.fragments) == {"F"}


def _strawberry_types() -> list[tuple[GraphQLObjectType, type]]:
    found = []
    for named in GRAPHQL_SCHEMA.type_map.values():
        declared = (named.extensions or {}).get("strawberry-definition")
        if isinstance(named, GraphQLObjectType) and isinstance(declared, StrawberryObjectDefinition):
            found.append((named, declared.origin))
    return found


def test_strawberry_generated_is_type_of__never_reads_its_info() -> None:
    """The plans call it with no info (compiler.ObjectPlan.type_check_reads_info)."""
    checked = [(type_, origin) for type_, origin in _strawberry_types() if _strawberry_type_check(type_)]
    assert {type_.name for type_, _ in checked} >= {"Employee", "Department", "JobPosting", "Application"}
    for type_, origin in checked:
        assert type_.is_type_of is not None
        assert type_.is_type_of(object.__new__(origin), None) is True, type_.name
        assert type_.is_type_of(object(), None) is False, type_.name
        # A cast value is judged by its cast first, so the runner must call the check for it.
        cast = strawberry.cast(object, object.__new__(origin))
        assert hasattr(cast, TYPE_CAST_ATTRIBUTE) and type_.is_type_of(cast, None) is False, type_.name


def test_strawberry_interface_resolve_type__names_an_uncast_value_by_its_class() -> None:
    """The runner resolves an interface's value by its class where Strawberry's resolver would
    (compiler._resolved_by_class): for each class the map holds, Strawberry's own resolver names
    an uncast instance of it that class's type; a cast one it names by its cast, which is why the
    runner asks Strawberry for any value carrying the cast attribute."""
    mapped: dict[str, dict[type, str]] = {}
    for named in GRAPHQL_SCHEMA.type_map.values():
        if not isinstance(named, GraphQLInterfaceType):
            continue
        plans = {t.name: ObjectPlan(t, []) for t in GRAPHQL_SCHEMA.get_possible_types(named)}
        by_class = _resolved_by_class(named, plans)
        if by_class is None:
            continue
        mapped[named.name] = {cls: plan.type.name for cls, plan in by_class.items()}
        assert named.resolve_type is not None
        info: Any = SimpleNamespace(schema=GRAPHQL_SCHEMA, field_name="node")
        for cls, plan in by_class.items():
            assert named.resolve_type(object.__new__(cls), info, named) == plan.type.name
            others = [c for c in by_class if c is not cls]
            if others:
                cast = strawberry.cast(others[0], object.__new__(cls))
                assert named.resolve_type(cast, info, named) == by_class[others[0]].type.name != plan.type.name
    assert set(mapped["Node"].values()) >= {"Employee", "Department", "JobPosting", "Application", "Organization"}


def test_strawberry_default_resolver__reads_the_attribute_without_info() -> None:
    """A field without a resolver of its own: the plans call its resolver with no info (or read
    the attribute themselves), and graphql-core's answer must be the same."""
    employee = GRAPHQL_SCHEMA.type_map["Employee"]
    assert isinstance(employee, GraphQLObjectType)
    email = employee.fields["email"].resolve
    assert email is not None and is_default_resolver(email)
    department = employee.fields["department"].resolve
    assert department is not None and not is_default_resolver(department)

    class Source:
        email = "a@b.co"

    assert email(Source(), None) == "a@b.co"


def test_graphql_core__refused_object_type__runner_reports_graphql_cores_error() -> None:
    """The runner builds the error graphql-core builds when ``is_type_of`` refuses a value."""
    thing = GraphQLObjectType(
        "Thing", {"name": GraphQLField(GraphQLString)}, is_type_of=lambda value, info: isinstance(value, dict)
    )
    query = GraphQLObjectType("Query", {"thing": GraphQLField(thing, resolve=lambda *_: "not a thing")})
    schema = GraphQLSchema(query)
    document = parse("{ thing { name } }")
    general = asyncio.run(graphql(schema, "{ thing { name } }"))

    async def planned() -> tuple[Any, Any]:
        executor = Executor.build(schema, document)
        assert isinstance(executor, Executor)
        plan = compile_operation(schema, executor.operation, {}, executor.variable_values)
        return await run_plan(plan, executor, None)

    data, errors = asyncio.run(planned())
    assert general.errors is not None
    assert (data, [error.formatted for error in errors]) == (general.data, [e.formatted for e in general.errors])


def test_aiodataloader__private__queue__holds_a_dispatch_and_is_swapped_for_a_new_list_when_sent() -> None:
    """execution/batch_loader.py tells a key's batch by the identity of the queue it joined:
    every key queued into one list goes out in one batch, and a key queued after the
    dispatch joins a new list (and a new batch)."""
    batches: list[list[int]] = []

    async def batch(keys: list[int]) -> list[int]:
        batches.append(list(keys))
        return keys

    async def run() -> tuple[bool, bool, bool]:
        loader = DataLoader(batch)
        first, second = loader.load(1), loader.load(2)
        queue = dataloader_queue(loader)
        together = [queued.key for queued in queue] == [1, 2]
        await asyncio.gather(first, second)
        third = loader.load(3)
        fresh = dataloader_queue(loader) is not queue and [queued.key for queued in dataloader_queue(loader)] == [3]
        await third
        return together, fresh, dataloader_queue(loader) == []

    assert asyncio.run(run()) == (True, True, True)
    assert batches == [[1, 2], [3]]
