"""What a field declares for the executors besides its resolver: a root field's load, a relation's read.

Both executors (graphql-core, and the compiled plans of execution/plan/) run the same fields.
A field may declare, once, a cheaper way to its value that the plans take directly:

- ``loaded(load, ...)``: a root field whose whole resolver is one synchronous
  ``load(context, arguments)`` (the root fields by id, schema/query.py). The field, and the
  resolver graphql-core calls, are made from the load, which a plan calls without Strawberry's
  wrapper. A load gives the value, None, a coroutine as a resolver would, or a ``Deferred``: an
  entity loader's key (execution/loaders.py), which a plan waits on a batch at a time, so a
  hundred aliased ``node`` fields cost a hundred loader keys and one wait.
- ``read(fn)``: a field with a resolver of its own whose value ``fn(source)`` can often read
  from its source (a relation its page loaded, schema/types/relations.py), or ``USE_RESOLVER``
  when the resolver must run after all.
- ``loaded(..., known_id=...)`` with ``prefetch(fn)`` on fields of the type it returns: a root
  field whose object's id is known before its read (``me``: the caller's own) lets a plan
  start those fields' reads in the root's own wave, rather than one round trip after it.
  ``fn(context, id, arguments)`` starts the very read the field's resolver will ask its
  loader for (the loader's cache then answers the resolver) and gives its future, or None
  when the resolver would read nothing or refuse; it never raises and never changes what
  the field answers, only when its read goes out.

This module is the one place these declarations are written and read (``load_of``,
``read_of``): schema/ declares, execution/plan/ reads, and neither imports the other.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import strawberry
from graphql import GraphQLField
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField
from strawberry.utils.str_converters import to_camel_case

T = TypeVar("T")

# Where a field's declarations sit in its Strawberry metadata.
_LOAD: Final = "hr-plan-load"
_READ: Final = "hr-plan-read"
_KNOWN_ID: Final = "hr-plan-known-id"
_PREFETCH: Final = "hr-plan-prefetch"

USE_RESOLVER: Final = object()
"""What a declared read gives when the field's resolver must run after all."""


@dataclass(frozen=True, slots=True)
class Deferred(Generic[T]):
    """A value a loader's batch will give: once ``ready`` is done (None: it is), ``value()``.

    ``ready`` is shared by every key of one batch, so the fields of a whole level wait on
    their batches once. ``value()`` raises what the batch raised.
    """

    ready: asyncio.Future[Any] | None
    value: Callable[[], T]

    async def result(self) -> T:
        """The value, for a resolver (graphql-core, which knows nothing of ``Deferred``)."""
        if self.ready is not None and not self.ready.done():
            # asyncio.wait never cancels what it waits for: the batch is shared.
            await asyncio.wait((self.ready,))
        return self.value()


Load = Callable[[Any, Mapping[str, Any]], Any]
"""``load(context, arguments)``: the value, None, a ``Deferred`` or a coroutine of the value.

``arguments`` are keyed by the arguments' GraphQL names and shared between requests when the
document gives them as literals: a load reads them and never changes them.
"""


async def settled(loaded: Any) -> Any:
    """What a load gave, awaited: the resolver's answer."""
    if isinstance(loaded, Deferred):
        return await loaded.result()
    if inspect.isawaitable(loaded):
        return await loaded
    return loaded


KnownId = Callable[[Any, Mapping[str, Any]], "str | None"]
"""``known_id(context, arguments)``: the id of the object a root field's load gives, when
known before the read (None: not known, or the field gives no object)."""

Prefetch = Callable[[Any, str, Mapping[str, Any]], "asyncio.Future[Any] | None"]
"""``prefetch(context, id, arguments)``: the field's read for the object ``id``, started; its
future, or None when the field would read nothing. ``arguments`` as a load's."""


def loaded(load: Load, *, returns: Any, description: str, known_id: KnownId | None = None, **arguments: Any) -> Any:
    """The Strawberry field whose resolver is ``load``, returning ``returns``.

    ``arguments`` are the field's arguments by name with their annotations (a description in
    ``Annotated``, as on any resolver). Their names must read the same in Python and in
    GraphQL: graphql-core hands the resolver Python names, a plan hands the load GraphQL ones.
    """
    for name in arguments:
        if to_camel_case(name) != name:
            raise ValueError(f"argument {name!r}: a loaded field's argument names must be the same in GraphQL")

    async def resolve(self: Any, info: strawberry.Info, **given: Any) -> Any:
        return await settled(load(info.context, given))

    keyword = inspect.Parameter.KEYWORD_ONLY
    # Strawberry reads a resolver's arguments and return type from its signature.
    resolve.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("info", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=strawberry.Info),
            *(inspect.Parameter(name, keyword, annotation=annotation) for name, annotation in arguments.items()),
        ],
        return_annotation=returns,
    )
    metadata: dict[str, Any] = {_LOAD: load} if known_id is None else {_LOAD: load, _KNOWN_ID: known_id}
    return strawberry.field(resolver=resolve, description=description, metadata=metadata)


def read(fn: Callable[[Any], Any]) -> dict[str, Any]:
    """The metadata of a field whose value ``fn(source)`` may read (or give ``USE_RESOLVER``)."""
    return {_READ: fn}


def prefetch(fn: Prefetch) -> dict[str, Any]:
    """The metadata of a field whose read ``fn`` can start before its parent is read."""
    return {_PREFETCH: fn}


def strawberry_field(definition: GraphQLField) -> StrawberryField | None:
    """The Strawberry field a graphql-core field was made from; None for one Strawberry did not make."""
    declared = (definition.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    return declared if isinstance(declared, StrawberryField) else None


def load_of(definition: GraphQLField) -> Load | None:
    """The field's declared load, for a field without extensions or permissions."""
    return _declared(definition, _LOAD)


def read_of(definition: GraphQLField) -> Callable[[Any], Any] | None:
    """The field's declared read, for a field without extensions or permissions."""
    return _declared(definition, _READ)


def known_id_of(definition: GraphQLField) -> KnownId | None:
    """A loaded root field's declared id before its read, for a field without extensions or permissions."""
    return _declared(definition, _KNOWN_ID)


def prefetch_of(definition: GraphQLField) -> Prefetch | None:
    """The field's declared prefetch, for a field without extensions or permissions."""
    return _declared(definition, _PREFETCH)


def _declared(definition: GraphQLField, key: str) -> Callable[..., Any] | None:
    """A field extension or permission class (Strawberry runs permissions as one) wraps the
    resolver; reading around it would skip them, so such a field always runs its resolver."""
    declared = strawberry_field(definition)
    if declared is None or declared.extensions or declared.permission_classes:
        return None
    metadata: Mapping[str, Any] = declared.metadata or {}
    hook = metadata.get(key)
    return hook if callable(hook) else None


__all__ = [
    "USE_RESOLVER",
    "Deferred",
    "KnownId",
    "Load",
    "Prefetch",
    "known_id_of",
    "load_of",
    "loaded",
    "prefetch",
    "prefetch_of",
    "read",
    "read_of",
    "settled",
    "strawberry_field",
]
