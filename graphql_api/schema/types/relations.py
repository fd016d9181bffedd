"""To-one relations loaded for a whole page at once, not once per object (issue 12 lever 3).

A field such as ``Application.employee`` read per object costs a DataLoader ``load`` each: a
coroutine, a future and a task for every node of a page (13-17 us an object). Instead, when a
connection builds its nodes, the fields the query selects on them are read from the document
once (and kept with the document's analyses, execution/documents.py), and each selected
relation is loaded with one ``get_many`` over the page's keys, then
what is selected on those objects in turn (``employee { department }``). The relation's
resolver then returns the object it was given, synchronously. Sibling pages reach each level
in the same loop turn, so each level's loads still batch into one wave, as before.

An object built anywhere else (a root field, a mutation's payload) was given nothing, and its
relation loads through the request's loader on demand, exactly as it always did. A relation
whose load fails (the call budget, DynamoDB) fails on each object's field, as a per-object
load did, not on the whole page.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from graphql import FieldNode, FragmentDefinitionNode

from datastore.aws import calls
from graphql_api.execution import fields
from graphql_api.execution.fields import USE_RESOLVER
from graphql_api.execution.selection import Selections

if TYPE_CHECKING:
    from graphql_api.execution.loaders import Loaders

T = TypeVar("T")


class Related(Protocol):
    """A GraphQL object type with to-one relations: it holds what a page load gave it."""

    related: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Failed:
    """What a relation's page-level load raised, raised again by each object's field."""

    error: Exception


@dataclass(frozen=True, slots=True)
class Relation:
    """``field`` of an object is the entity ``loader`` reads by the object's ``key`` attribute."""

    field: str
    key: str
    loader: str
    target: type[Any]  # a GraphQL type with ``of(entity)``


@functools.cache
def relations() -> Mapping[type[Any], Mapping[str, Relation]]:
    """Every to-one relation of the hot types, by type and GraphQL field name (built on first use,
    once every type module is importable)."""
    from graphql_api.schema.types.application import Application
    from graphql_api.schema.types.department import Department
    from graphql_api.schema.types.employee import Employee
    from graphql_api.schema.types.job_posting import JobPosting

    declared = {
        Application: [
            Relation("employee", "emp_id", "employee", Employee),
            Relation("jobPosting", "job_id", "job", JobPosting),
        ],
        Department: [Relation("manager", "manager_id", "employee", Employee)],
        Employee: [Relation("department", "department_id", "department", Department)],
        JobPosting: [Relation("department", "department_id", "department", Department)],
    }
    return {type_: {relation.field: relation for relation in of_type} for type_, of_type in declared.items()}


def preloaded(obj: Related, field: str) -> Any:
    """The relation's object (or None) if its page loaded it, raising what the load raised;
    USE_RESOLVER if it was not loaded with a page."""
    related = obj.related
    if related is None or field not in related:
        return USE_RESOLVER
    value = related[field]
    if isinstance(value, Failed):
        raise value.error
    return value


def plan_read(field: str) -> dict[str, Any]:
    """A relation field's metadata: compiled plans read a preloaded relation without calling
    the resolver (execution/fields.py), which saves Strawberry's wrapper and a resolve-info a node."""
    return fields.read(functools.partial(_plan_read, field))


def _plan_read(field: str, obj: Related) -> Any:
    return preloaded(obj, field)


def resolve(obj: Related, field: str, loaders: Loaders) -> Any:
    """The relation's object if its page loaded it, else an awaitable that loads it."""
    value = preloaded(obj, field)
    if value is not USE_RESOLVER:
        return value
    relation = relations()[type(obj)][field]
    key = getattr(obj, relation.key)
    if key is None:
        return None
    return _load_one(getattr(loaders, relation.loader).get(key), relation.target)


async def _load_one(load: Awaitable[Any], target: type[Any]) -> Any:
    found = await load
    return None if found is None else target.of(found)


# --- which relations a query selects on a page's nodes ------------------------------------------

RelationPlan = tuple[tuple[Relation, "RelationPlan"], ...]
"""The relations to load on one level of objects, each with the plan for the objects it loads."""


class Selection:
    """What a query selects on a page's nodes, read through the one walker (graphql_api/execution/selection.py)."""

    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode], variables: Mapping[str, Any]) -> None:
        self.selections = Selections(fragments, variables)

    def subfields(self, nodes: Sequence[FieldNode]) -> dict[str, list[FieldNode]]:
        """The fields selected under ``nodes``, by field name (aliases merged), fragments expanded.

        Type conditions are not checked: under a connection's node, whose type is concrete,
        validation admits only fragments on that type or an interface it implements.
        """
        found: dict[str, list[FieldNode]] = {}
        for node, _on in self.selections.fields(node.selection_set for node in nodes):
            found.setdefault(node.name.value, []).append(node)
        return found

    def plan(self, target: type[Any], nodes: Sequence[FieldNode]) -> RelationPlan:
        """The relations selected on objects of ``target`` under ``nodes``, recursively."""
        declared = relations().get(target, {})
        if not declared:
            return ()
        selected = self.subfields(nodes)
        return tuple(
            (relation, self.plan(relation.target, selected[name]))
            for name, relation in declared.items()
            if name in selected
        )

    def connection_plan(self, target: type[Any], connection: Sequence[FieldNode]) -> RelationPlan:
        """The plan for a connection's nodes: its ``edges { node { ... } }`` selections."""
        edges = self.subfields(connection).get("edges", [])
        return self.plan(target, self.subfields(edges).get("node", [])) if edges else ()


async def load(loaders: Loaders, objects: Sequence[Related], plan: RelationPlan) -> None:
    """Give ``objects`` every relation of ``plan``: one ``get_many`` per relation and level.

    The relations of one level load concurrently (one wave); the objects they bring are built
    once per key, shared by every parent that names it, and planned for together.
    """
    if not plan or not objects:
        return
    found: list[tuple[Mapping[Any, Any], int] | BaseException]
    if len(plan) == 1:
        # One relation is awaited here, not in a task of its own as gather would (Q2 made 60
        # tasks a request this way): what it raises is its result, as gather's would be.
        relation, _ = plan[0]
        try:
            found = [await _with_depth(getattr(loaders, relation.loader).get_many(_keys(objects, relation.key)))]
        except Exception as error:
            found = [error]
    else:
        found = await asyncio.gather(
            *(
                _with_depth(getattr(loaders, relation.loader).get_many(_keys(objects, relation.key)))
                for relation, _ in plan
            ),
            return_exceptions=True,
        )
    # gather runs each get_many in a task of its own: carry the round trips they waited on
    # back here, so the next level's loads are counted one deeper (datastore.aws.calls.current_depth).
    calls.waited(max((result[1] for result in found if not isinstance(result, BaseException)), default=0))
    deeper: list[Awaitable[None]] = []
    for (relation, inner), result in zip(plan, found, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result  # cancelled: nothing to answer
            failed = Failed(result)
            for obj in objects:
                if obj.related is None:
                    obj.related = {}
                obj.related[relation.field] = None if getattr(obj, relation.key) is None else failed
            continue
        entities, _depth = result
        built = {key: None if entity is None else relation.target.of(entity) for key, entity in entities.items()}
        for obj in objects:
            key = getattr(obj, relation.key)
            if obj.related is None:
                obj.related = {}
            obj.related[relation.field] = None if key is None else built[key]
        if inner:
            deeper.append(load(loaders, [value for value in built.values() if value is not None], inner))
    if len(deeper) == 1:
        await deeper[0]  # in this task: the depth it reaches is this context's already
    elif deeper:
        # And the deeper levels' back to the caller: what it loads next waited on them all.
        calls.waited(max(depth for _, depth in await asyncio.gather(*map(_with_depth, deeper))))


async def _with_depth(awaitable: Awaitable[T]) -> tuple[T, int]:
    """``awaitable``'s result and the depth its task reached (``calls.current_depth``)."""
    result = await awaitable
    return result, calls.current_depth.get()


def _keys(objects: Sequence[Related], attribute: str) -> list[Any]:
    return [key for obj in objects if (key := getattr(obj, attribute)) is not None]
