"""What ``__schema`` and ``__type`` return, counted before they run as the query cost counts data.

The schema is fixed, so what an introspection field returns is known from the document
alone: this walks the schema's own elements (its types, their fields, arguments, enum
values, wrappers, directives) under the document's selections, as execution will, and
counts each object 1 and each leaf value (a null included) the leaf weight, item by item
through every list. A full introspection (GraphiQL's, codegen's) costs what its answer
holds, about 2,100 for this schema (tests/graphql_api/execution/test_query_cost.py prints it), and
fifteen of them under aliases fifteen times that, refused by MAX_QUERY_COST before any runs.

A deprecated element counts whether or not ``includeDeprecated`` asks for it (a bound, not
a guess); ``__type(name: $variable)`` reads the variable, which the analysis cache keys on
(limits/analysis.py ``COST_ARGUMENTS``). An empty list, like null, is one value.

The walk is work of its own, item by item, so it stops once it has shown the cost is past a
ceiling (MAX_QUERY_COST, passed down by MaxCost): every step adds at least half a leaf to
the total, so ``2 x ceiling / leaf weight`` steps prove it, and no document costs more than
that many steps (40,000 at the default 5,000) to refuse. Each (selection, schema element)
pair is counted once, so a fragment spread in many places is walked once per element.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Final

from graphql import (
    FieldNode,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    StringValueNode,
    VariableNode,
    is_abstract_type,
)

from graphql_api.execution.selection import Selections

SCHEMA_FIELD: Final = "__schema"
TYPE_FIELD: Final = "__type"
ROOT_FIELDS: Final = frozenset({SCHEMA_FIELD, TYPE_FIELD})

# What a field of an introspection type holds: the introspection type of its values, whether
# it is a list, and its value(s) for one schema element (None: null).
Children = Callable[[GraphQLSchema, Any], Any]


def _fields(_schema: GraphQLSchema, type_: Any) -> list[Any] | None:
    return list(type_.fields.values()) if isinstance(type_, GraphQLObjectType | GraphQLInterfaceType) else None


def _interfaces(_schema: GraphQLSchema, type_: Any) -> list[Any] | None:
    return list(type_.interfaces) if isinstance(type_, GraphQLObjectType | GraphQLInterfaceType) else None


def _possible_types(schema: GraphQLSchema, type_: Any) -> list[Any] | None:
    return list(schema.get_possible_types(type_)) if is_abstract_type(type_) else None


def _enum_values(_schema: GraphQLSchema, type_: Any) -> list[Any] | None:
    return list(type_.values.values()) if isinstance(type_, GraphQLEnumType) else None


def _input_fields(_schema: GraphQLSchema, type_: Any) -> list[Any] | None:
    return list(type_.fields.values()) if isinstance(type_, GraphQLInputObjectType) else None


def _of_type(_schema: GraphQLSchema, type_: Any) -> Any:
    return type_.of_type if isinstance(type_, GraphQLList | GraphQLNonNull) else None


CHILDREN: Final[dict[tuple[str, str], tuple[str, bool, Children]]] = {
    ("__Schema", "types"): ("__Type", True, lambda _, schema: list(schema.type_map.values())),
    ("__Schema", "queryType"): ("__Type", False, lambda _, schema: schema.query_type),
    ("__Schema", "mutationType"): ("__Type", False, lambda _, schema: schema.mutation_type),
    ("__Schema", "subscriptionType"): ("__Type", False, lambda _, schema: schema.subscription_type),
    ("__Schema", "directives"): ("__Directive", True, lambda _, schema: list(schema.directives)),
    ("__Type", "fields"): ("__Field", True, _fields),
    ("__Type", "interfaces"): ("__Type", True, _interfaces),
    ("__Type", "possibleTypes"): ("__Type", True, _possible_types),
    ("__Type", "enumValues"): ("__EnumValue", True, _enum_values),
    ("__Type", "inputFields"): ("__InputValue", True, _input_fields),
    ("__Type", "ofType"): ("__Type", False, _of_type),
    ("__Field", "args"): ("__InputValue", True, lambda _, field: list(field.args.values())),
    ("__Field", "type"): ("__Type", False, lambda _, field: field.type),
    ("__InputValue", "type"): ("__Type", False, lambda _, value: value.type),
    ("__Directive", "args"): ("__InputValue", True, lambda _, directive: list(directive.args.values())),
}
# A list of leaf values: one leaf per item.
LEAF_LISTS: Final[dict[tuple[str, str], Callable[[Any], int]]] = {
    ("__Directive", "locations"): lambda directive: len(directive.locations),
}


class PastCeiling(Exception):
    """The cost is shown to be past the ceiling; the walk stopped there."""


class IntrospectionCost:
    """The cost of the introspection fields of one operation (fragments and variables in ``selections``).

    Counted in whole leaves (an object is ``1 / leaf_weight`` of them), as Fractions would
    cost a microsecond an addition. With a ``ceiling``, PastCeiling is raised as soon as the
    walk shows the cost exceeds it.
    """

    def __init__(
        self, schema: GraphQLSchema, selections: Selections, leaf_weight: Fraction, ceiling: int | None = None
    ) -> None:
        self.schema = schema
        self.selections = selections
        self.leaf_weight = leaf_weight
        self.object = 1 / leaf_weight
        if self.object.denominator != 1:
            raise ValueError("the leaf weight must divide an object's weight of 1")
        # Each step (a value, or a field of one) adds at least a leaf to the total, and at
        # most two steps share one leaf (a field and its one value): past this many steps the
        # total is past the ceiling.
        self.max_steps = None if ceiling is None else math.floor(2 * ceiling * self.object)
        self.steps = 0
        self._memo: dict[tuple[int, int], int] = {}
        # What a node selects on an introspection type: the same for every element.
        self._fields: dict[tuple[int, str], list[tuple[FieldNode, str]]] = {}

    def root(self, node: FieldNode) -> Fraction:
        """``__schema { ... }`` or ``__type(name: ...) { ... }`` on the query root."""
        if node.name.value == SCHEMA_FIELD:
            return self.leaf_weight * self.value(node, "__Schema", self.schema)
        name: Any = next((argument.value for argument in node.arguments or () if argument.name.value == "name"), None)
        if isinstance(name, VariableNode):
            name = self.selections.variables.get(name.name.value)
        elif isinstance(name, StringValueNode):
            name = name.value
        found = self.schema.type_map.get(name) if isinstance(name, str) else None
        return self.leaf_weight * self.value(node, "__Type", found)

    def value(self, node: FieldNode, kind: str, element: Any) -> int:
        """Leaves of one object of introspection type ``kind`` for ``element`` with ``node``'s selections."""
        self._step()
        if element is None:
            return 1  # null, one value
        key = (id(node), id(element))
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = int(self.object) + self._selection(node, kind, element)
        return found

    def values(self, node: FieldNode, kind: str, elements: Sequence[Any] | None) -> int:
        if not elements:
            return 1  # null or [], one value
        return sum(self.value(node, kind, element) for element in elements)

    def _selection(self, node: FieldNode, kind: str, element: Any) -> int:
        total = 0
        for field, name in self._selected(node, kind):
            self._step()
            children = CHILDREN.get((kind, name))
            if children is not None:
                child_kind, is_list, of = children
                found = of(self.schema, element)
                total += self.values(field, child_kind, found) if is_list else self.value(field, child_kind, found)
                continue
            leaves = LEAF_LISTS.get((kind, name))
            total += 1 if leaves is None else max(1, leaves(element))  # name, kind, ...
        return total

    def _selected(self, node: FieldNode, kind: str) -> list[tuple[FieldNode, str]]:
        key = (id(node), kind)
        found = self._fields.get(key)
        if found is None:
            selected = self.selections.fields([node.selection_set], lambda on: on == kind)
            # ``__typename`` costs nothing (query_cost.py), so it is no step of the walk either.
            found = self._fields[key] = [
                (field, field.name.value) for field, _on in selected if field.name.value != "__typename"
            ]
        return found

    def _step(self) -> None:
        self.steps += 1
        if self.max_steps is not None and self.steps > self.max_steps:
            raise PastCeiling
