"""The Node interface: every object has an opaque global id."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, Final

import strawberry

from graphql_api.execution import fields, ids

ID_DESCRIPTION: Final = (
    "Opaque global id (base64url text). Pass it to `node(id)` or the type's own root field, "
    "and store it as is: do not parse it. Ids of another organisation name nothing."
)


@strawberry.interface(description="An object with an opaque, globally unique id.")
class Node:
    id: strawberry.ID = strawberry.field(description=ID_DESCRIPTION)


def encoded_id(type_name: str, *parts: str) -> Any:
    """The ``id`` field of a type whose objects come by the page: encoded from the object's
    ``parts`` attributes when a query selects it, not for every object built (a base64
    encoding each, which a 1,000-object answer that never asks for ids paid for nothing).

    The field reads the same in the schema as ``Node.id``; the compiled plans read it without
    the resolver (execution/fields.py ``read``).
    """
    read: Callable[[Any], Any] = attrgetter(*parts)
    value: Callable[[Any], str]
    if len(parts) == 1:

        def value(obj: Any) -> str:
            return ids.encode(type_name, read(obj))
    else:

        def value(obj: Any) -> str:
            return ids.encode(type_name, *read(obj))

    def resolve(self: Any) -> strawberry.ID:
        return strawberry.ID(value(self))

    return strawberry.field(resolver=resolve, description=ID_DESCRIPTION, metadata=fields.read(value))
