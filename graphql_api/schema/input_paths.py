"""Where each datastore field sits in a mutation's input: the map errors.py translates with.

The datastore names what it refuses by its own field names (``email``, ``departmentId``,
``jobId``). Where a mutation's input calls the same thing by another name, the input class
says so once, beside its fields::

    @input_paths.declare(jobId="id")
    @strawberry.input
    class PublishJobPostingInput: ...

Every other datastore field is the input field of the same name. A field the input does not
have at all names the input as a whole (``input``), never a path that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from strawberry.types.base import get_object_definition
from strawberry.utils.str_converters import to_camel_case

T = TypeVar("T", bound=type)

INPUT: Final = "input"

_DECLARED: Final = "__input_paths__"


@dataclass(frozen=True, slots=True)
class InputPaths:
    """One mutation input's fields (GraphQL names) and its datastore-to-input renames."""

    fields: frozenset[str]
    renames: Mapping[str, str]

    def path(self, datastore_field: str) -> str:
        name = self.renames.get(datastore_field, datastore_field)
        return f"{INPUT}.{name}" if name in self.fields else INPUT


def declare(**renames: str) -> Callable[[T], T]:
    """Class decorator over ``@strawberry.input``: ``datastore field="input field"`` where they differ.

    A rename to a field the input does not have fails here, at import.
    """

    def apply(input_type: T) -> T:
        setattr(input_type, _DECLARED, _paths(input_type, renames))
        return input_type

    return apply


def of(input_type: type) -> InputPaths:
    """The paths of a ``@strawberry.input`` class: as declared, or its own fields only."""
    declared = getattr(input_type, _DECLARED, None)
    return declared if isinstance(declared, InputPaths) else _paths(input_type, {})


def _paths(input_type: type, renames: Mapping[str, str]) -> InputPaths:
    definition = get_object_definition(input_type, strict=True)
    # The schema's auto_camel_case gives these names (tests/graphql_api/schema/test_input_paths.py).
    fields = frozenset(field.graphql_name or to_camel_case(field.python_name) for field in definition.fields)
    unknown = set(renames.values()) - fields
    if unknown:
        raise ValueError(f"{input_type.__name__} has no field {', '.join(sorted(unknown))}")
    return InputPaths(fields, dict(renames))
