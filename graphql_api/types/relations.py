"""To-one relations loaded for a whole page at once, not once per object (issue 12 lever 3).

A field such as ``Application.employee`` read per object costs a DataLoader ``load`` each: a
coroutine, a future and a task for every node of a page (13-17 us an object). Instead, when a
connection builds its nodes, the fields the query selects on them are read from the document
once, and each selected relation is loaded with one ``get_many`` over the page's keys, then
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
from typing import TYPE_CHECKING, Any, Protocol

from graphql import (
    BooleanValueNode,
    DirectiveNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionNode,
    SelectionSetNode,
    VariableNode,
)

from graphql_api.plan.compiler import PLAN_READ, USE_RESOLVER

if TYPE_CHECKING:
    from graphql_api.loaders import Loaders


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
    from graphql_api.types.application import Application
    from graphql_api.types.department import Department
    from graphql_api.types.employee import Employee
    from graphql_api.types.job_posting import JobPosting

    declared = {
        Application: [
            Relation("employee", "emp_id", "employee", Employee),
            Relation("jobPosting", "job_id", "job", JobPosting),
        ],
        Department: [Relation("manager", "manager_id", "employee", Employee)],
        Employee: [Relation("department", "department_id", "department", Department)],
        JobPosting: [Relation("department", "department_id", "department", Department)],
    }
    return {type_: {relation.field: relation for relation in fields} for type_, fields in declared.items()}


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
    the resolver (plan/compiler.py), which saves Strawberry's wrapper and a resolve-info a node."""
    return {PLAN_READ: functools.partial(_plan_read, field)}


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

Plan = tuple[tuple[Relation, "Plan"], ...]
"""The relations to load on one level of objects, each with the plan for the objects it loads."""


class Selection:
    """The document's fragments and variables, to read what a field selects (skip/include honoured)."""

    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode], variables: Mapping[str, Any]) -> None:
        self.fragments = fragments
        self.variables = variables

    def subfields(self, nodes: Sequence[FieldNode]) -> dict[str, list[FieldNode]]:
        """The fields selected under ``nodes``, by field name (aliases merged), fragments expanded.

        Type conditions are not checked: under a connection's node, whose type is concrete,
        validation admits only fragments on that type or an interface it implements.
        """
        found: dict[str, list[FieldNode]] = {}
        for node in nodes:
            self._collect(node.selection_set, found, set())
        return found

    def _collect(
        self, selection_set: SelectionSetNode | None, found: dict[str, list[FieldNode]], seen: set[str]
    ) -> None:
        for selection in () if selection_set is None else selection_set.selections:
            if not self._included(selection):
                continue
            if isinstance(selection, FieldNode):
                found.setdefault(selection.name.value, []).append(selection)
            elif isinstance(selection, InlineFragmentNode):
                self._collect(selection.selection_set, found, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is not None and name not in seen:
                    seen.add(name)
                    self._collect(fragment.selection_set, found, seen)

    def _included(self, node: SelectionNode) -> bool:
        """False under ``@skip(if: true)`` or ``@include(if: false)``, literal or variable."""
        for directive in node.directives or ():
            name = directive.name.value
            if name in ("skip", "include") and self._condition(directive) is (name == "skip"):
                return False
        return True

    def _condition(self, directive: DirectiveNode) -> bool:
        for argument in directive.arguments or ():
            if argument.name.value == "if":
                value = argument.value
                if isinstance(value, VariableNode):
                    return self.variables.get(value.name.value) is True
                return isinstance(value, BooleanValueNode) and value.value
        return False  # validation requires ``if``; never reached for a valid document

    def plan(self, target: type[Any], nodes: Sequence[FieldNode]) -> Plan:
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

    def connection_plan(self, target: type[Any], connection: Sequence[FieldNode]) -> Plan:
        """The plan for a connection's nodes: its ``edges { node { ... } }`` selections."""
        edges = self.subfields(connection).get("edges", [])
        return self.plan(target, self.subfields(edges).get("node", [])) if edges else ()


async def load(loaders: Loaders, objects: Sequence[Related], plan: Plan) -> None:
    """Give ``objects`` every relation of ``plan``: one ``get_many`` per relation and level.

    The relations of one level load concurrently (one wave); the objects they bring are built
    once per key, shared by every parent that names it, and planned for together.
    """
    if not plan or not objects:
        return
    found: list[Mapping[Any, Any] | BaseException] = await asyncio.gather(
        *(
            getattr(loaders, relation.loader).get_many(
                [key for obj in objects if (key := getattr(obj, relation.key)) is not None]
            )
            for relation, _ in plan
        ),
        return_exceptions=True,
    )
    deeper: list[Awaitable[None]] = []
    for (relation, inner), entities in zip(plan, found, strict=True):
        if isinstance(entities, BaseException):
            if not isinstance(entities, Exception):
                raise entities  # cancelled: nothing to answer
            failed = Failed(entities)
            for obj in objects:
                if obj.related is None:
                    obj.related = {}
                obj.related[relation.field] = None if getattr(obj, relation.key) is None else failed
            continue
        built = {key: None if entity is None else relation.target.of(entity) for key, entity in entities.items()}
        for obj in objects:
            key = getattr(obj, relation.key)
            if obj.related is None:
                obj.related = {}
            obj.related[relation.field] = None if key is None else built[key]
        if inner:
            deeper.append(load(loaders, [value for value in built.values() if value is not None], inner))
    if deeper:
        await asyncio.gather(*deeper)
