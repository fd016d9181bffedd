"""To-one relations loaded for a whole page at once, not once per object.

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

Each relation is one ``Relation`` object, declared as a class attribute of the type it
belongs to (``Employee.DEPARTMENT``), which is how the page loads find it: its field, its
key, its loader and its target are typed there, not looked up by name.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar

from graphql import FieldNode, FragmentDefinitionNode

from datastore.aws import calls
from graphql_api.execution import fields
from graphql_api.execution.fields import USE_RESOLVER
from graphql_api.execution.selection import Selections

if TYPE_CHECKING:
    from graphql_api.execution.loaders import Entities, Loaders

T = TypeVar("T")


class Related(Protocol):
    """A GraphQL object type with to-one relations: it holds what a page load gave it."""

    related: Preloaded | None


class Target(Related, Protocol):
    """A GraphQL object type a relation leads to, made from the entity its loader reads."""

    @classmethod
    def of(cls, entity: Any) -> Self: ...


P = TypeVar("P", bound=Related)
C = TypeVar("C", bound=Target)


@dataclass(frozen=True, slots=True)
class Failed:
    """What a relation's page-level load raised, raised again by each object's field."""

    error: Exception


# The relations declared on each type, in the order of its class body (``Relation.__set_name__``).
_declared: dict[type[Any], tuple[Relation[Any, Any], ...]] = {}


@dataclass(frozen=True, slots=True, eq=False)
class Relation(Generic[P, C]):
    """A to-one relation of ``P`` objects: their GraphQL ``field`` is the ``C`` that ``loader``
    reads by each object's ``key`` (None: the object has none).

    Declared once, as a class attribute of ``P``, which registers it for the page loads.
    ``target`` is a function because the types name each other (an employee's department,
    a department's manager). Compared by identity: it keys each object's ``related``.
    """

    field: str  # the GraphQL field's name: what a document selects
    key: Callable[[P], str | None]
    loader: Callable[[Loaders], Entities[str, Any]]
    target: Callable[[], type[C]]

    def __set_name__(self, owner: type[P], _name: str) -> None:
        _declared[owner] = (*_declared.get(owner, ()), self)

    def plan_read(self) -> dict[str, Any]:
        """The field's metadata: compiled plans read a preloaded relation without calling the
        resolver (execution/fields.py), which saves Strawberry's wrapper and a resolve-info a node."""
        return fields.read(functools.partial(preloaded, relation=self))

    def resolve(self, obj: P, loaders: Loaders) -> C | Awaitable[C | None] | None:
        """The relation's object if its page loaded it, else an awaitable that loads it."""
        value = preloaded(obj, self)
        if value is not USE_RESOLVER:
            return value  # type: ignore[no-any-return]
        key = self.key(obj)
        if key is None:
            return None
        return self._load_one(self.loader(loaders).get(key))

    async def _load_one(self, load: Awaitable[Any]) -> C | None:
        found = await load
        return None if found is None else self.target().of(found)


Preloaded = dict[Relation[Any, Any], Any]
"""What a page load gave an object: each relation's object, None, or ``Failed``. (A real
alias, not a string: Strawberry evaluates the ``strawberry.Private`` fields that hold it.)"""


def declared_on(type_: type[Any]) -> tuple[Relation[Any, Any], ...]:
    """The relations declared on ``type_`` (none for a type without)."""
    return _declared.get(type_, ())


def preloaded(obj: Related, relation: Relation[Any, Any]) -> Any:
    """The relation's object (or None) if its page loaded it, raising what the load raised;
    USE_RESOLVER if it was not loaded with a page."""
    related = obj.related
    if related is None or relation not in related:
        return USE_RESOLVER
    value = related[relation]
    if isinstance(value, Failed):
        raise value.error
    return value


# --- which relations a query selects on a page's nodes ------------------------------------------

RelationPlan = tuple[tuple[Relation[Any, Any], "RelationPlan"], ...]
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
        declared = declared_on(target)
        if not declared:
            return ()
        selected = self.subfields(nodes)
        return tuple(
            (relation, self.plan(relation.target(), selected[relation.field]))
            for relation in declared
            if relation.field in selected
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
            found = [await _with_depth(relation.loader(loaders).get_many(_keys(objects, relation)))]
        except Exception as error:
            found = [error]
    else:
        found = await asyncio.gather(
            *(_with_depth(relation.loader(loaders).get_many(_keys(objects, relation))) for relation, _ in plan),
            return_exceptions=True,
        )
    # gather runs each get_many in a task of its own: carry the round trips they waited on
    # back here, so the next level's loads are counted one deeper (datastore.aws.calls.current_depth).
    calls.waited(max((result[1] for result in found if not isinstance(result, BaseException)), default=0))
    deeper: list[Awaitable[None]] = []
    for (relation, inner), result in zip(plan, found, strict=True):
        key_of = relation.key
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result  # cancelled: nothing to answer
            failed = Failed(result)
            for obj in objects:
                if obj.related is None:
                    obj.related = {}
                obj.related[relation] = None if key_of(obj) is None else failed
            continue
        entities, _depth = result
        of = relation.target().of
        built = {key: None if entity is None else of(entity) for key, entity in entities.items()}
        for obj in objects:
            key = key_of(obj)
            if obj.related is None:
                obj.related = {}
            obj.related[relation] = None if key is None else built[key]
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


def _keys(objects: Sequence[Related], relation: Relation[Any, Any]) -> list[Any]:
    key_of = relation.key
    return [key for obj in objects if (key := key_of(obj)) is not None]
