"""Maximum query cost: what a query can make the server return, counted before it runs.

The cost is the number of objects the response can hold, plus a weight for every leaf
(scalar) value in it, multiplied through lists, nesting and aliases:

    cost(leaf field)        = LEAF_WEIGHT                         (1/4)
    cost(__typename)        = 0   (Apollo Client and urql add it to every selection: a query
                                   costs the same from them as from curl)
    cost(object field)      = 1 + cost(its selections)
    cost(connection field)  = 1 + cost(pageInfo ...) + first x cost(edges' selections)
    cost(edges { ... })     = cost(cursor) + cost(node field)     (per edge; node is an object)
    cost(plain list field)  = PLAIN_LIST_ITEMS x cost(one item)   (``AuditEvent.changes``)
    cost(bulk field)        = 1 + rows + cost(its selections), where a plain list inside
                              counts ``rows`` items             (``importEmployees``)

A bulk field is one whose ``input`` argument has a ``rows`` list: each row is a write (its 1)
and a result in the payload's per-row list, so 100 rows cost about 100 times one.

``first`` is the argument's value (variables resolved), the default page size (20) when
omitted, and at most the maximum page size (100). The connection's own 1 is the Query that
reads it. Each alias is a field of its own, so fifteen aliases cost fifteen times one. The
total is rounded up to a whole number and compared with MAX_QUERY_COST (limits/max_cost.py)
after validation and before execution: a refused query never touches DynamoDB. Why these weights
(README "Abuse limits"): an object is a DynamoDB item to read and a dict to build; a leaf is
one value to copy, a quarter of that or less, so the bench's real pages (Q1: 20 departments
x 50 employees, 6 fields each = 2,547) fit under 5,000 with room, while the directory read
fifteen times over (15 x 100 x 100 employees = 416,641) does not come close.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from graphql import (
    DocumentNode,
    FieldNode,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    is_leaf_type,
)

from datastore.table.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from graphql_api.execution.introspection_cost import ROOT_FIELDS, IntrospectionCost
from graphql_api.execution.rows import input_rows
from graphql_api.execution.selection import Selections, fragments_of, operations_of, variable_values

LEAF_WEIGHT: Final = Fraction(1, 4)
# A list that is not a connection (an audit event's field changes): at most one entry per
# field of the entity changed, and no entity has more than this many fields.
PLAIN_LIST_ITEMS: Final = 16


def _is_list(type_: GraphQLOutputType) -> bool:
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    return isinstance(type_, GraphQLList)


class CostCounter:
    """The cost of an operation in a schema, with its fragments and variables (selection.py)."""

    def __init__(self, schema: GraphQLSchema, selections: Selections, ceiling: int | None = None) -> None:
        self.schema = schema
        self.selections = selections
        self.variables = selections.variables
        # A field's cost on a parent type, by node and by the items a plain list holds there: a
        # fragment spread in many places (or a fragment of fragments) is counted once per
        # parent, not once per path to it.
        self._memo: dict[tuple[int, str, int], Fraction] = {}
        # Items a plain list holds: PLAIN_LIST_ITEMS, or a bulk field's row count inside it.
        self._plain_list_items = PLAIN_LIST_ITEMS
        self.introspection = IntrospectionCost(schema, selections, LEAF_WEIGHT, ceiling)

    def operation(self, operation: OperationDefinitionNode) -> Fraction:
        root = {
            OperationType.QUERY: self.schema.query_type,
            OperationType.MUTATION: self.schema.mutation_type,
            OperationType.SUBSCRIPTION: self.schema.subscription_type,
        }[operation.operation]
        return Fraction(0) if root is None else self.selection_set(operation.selection_set, root)

    def selection_set(self, selection_set: SelectionSetNode | None, parent: GraphQLNamedType) -> Fraction:
        total = Fraction(0)
        for node, on in self.selections.fields([selection_set]):
            # Under a type condition, the fields are those of that type (a union's members).
            inner = parent if on is None else self.schema.get_type(on)
            if inner is not None:
                total += self.field(node, inner)
        return total

    def field(self, node: FieldNode, parent: GraphQLNamedType) -> Fraction:
        key = (id(node), parent.name, self._plain_list_items)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._field(node, parent)
        return found

    def _field(self, node: FieldNode, parent: GraphQLNamedType) -> Fraction:
        name = node.name.value
        if name == "__typename":
            return Fraction(0)  # a caching client's own addition: the type name is no read
        if name in ROOT_FIELDS and parent is self.schema.query_type:
            return self.introspection.root(node)  # what it returns from this schema, exactly
        if not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) or name not in parent.fields:
            return Fraction(0)  # an error validation already reported
        definition = parent.fields[name]
        named = get_named_type(definition.type)
        if is_leaf_type(named):
            return LEAF_WEIGHT
        if named.name.endswith("Connection"):
            return 1 + self.connection(node, named)
        rows = input_rows(node, self.variables)
        if rows is not None:
            outer, self._plain_list_items = self._plain_list_items, rows
            try:
                return 1 + rows + self.selection_set(node.selection_set, named)
            finally:
                self._plain_list_items = outer
        one = 1 + self.selection_set(node.selection_set, named)
        return self._plain_list_items * one if _is_list(definition.type) else one

    def connection(self, node: FieldNode, connection: GraphQLNamedType) -> Fraction:
        """What a connection's selections cost: ``edges`` once per item, the rest once."""
        first = self.first(node)
        total = Fraction(0)
        for selection, _on in self.selections.fields([node.selection_set]):
            if selection.name.value == "edges" and isinstance(connection, GraphQLObjectType):
                edge = get_named_type(connection.fields["edges"].type)
                total += first * self.selection_set(selection.selection_set, edge)
            elif selection.name.value == "pageInfo" and isinstance(connection, GraphQLObjectType):
                page_info = get_named_type(connection.fields["pageInfo"].type)
                total += self.selection_set(selection.selection_set, page_info)
            else:
                total += self.field(selection, connection)
        return total

    def first(self, node: FieldNode) -> int:
        for argument in node.arguments or ():
            if argument.name.value != "first":
                continue
            value: Any = argument.value
            if isinstance(value, VariableNode):
                value = self.variables.get(value.name.value, DEFAULT_PAGE_SIZE)
            elif isinstance(value, IntValueNode):
                value = int(value.value)
            if isinstance(value, int):
                return max(0, min(value, MAX_PAGE_SIZE))
        return DEFAULT_PAGE_SIZE


def query_cost(
    schema: GraphQLSchema,
    document: DocumentNode,
    variables: Mapping[str, Any] | None = None,
    operation_name: str | None = None,
    *,
    ceiling: int | None = None,
) -> int:
    """The cost of ``document``'s operation (the costliest if it has several), rounded up.

    ``variables`` as the client sent them; they are coerced here as execution will (defaults).
    With a ``ceiling``, introspection_cost.PastCeiling is raised as soon as counting
    introspection has shown the cost is past it (that count is work item by item).
    """
    fragments = fragments_of(document)
    costs = [
        CostCounter(schema, Selections(fragments, variable_values(schema, operation, variables)), ceiling).operation(
            operation
        )
        for operation in operations_of(document, operation_name)
    ]
    return math.ceil(max(costs, default=Fraction(0)))
