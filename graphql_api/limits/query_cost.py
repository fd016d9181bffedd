"""Maximum query cost: what a query can make the server return, counted before it runs.

The cost is the number of objects the response can hold, plus a weight for every leaf
(scalar) value in it, multiplied through lists, nesting and aliases:

    cost(leaf field)        = LEAF_WEIGHT                         (1/4; ``__typename`` too)
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
total is rounded up to a whole number and compared with MAX_QUERY_COST. The check runs after
validation and before execution: a refused query never touches DynamoDB. Why these weights
(README "Abuse limits"): an object is a DynamoDB item to read and a dict to build; a leaf is
one value to copy, a quarter of that or less, so the bench's real pages (Q1: 20 departments
x 50 employees, 6 fields each = 2,547) fit under 5,000 with room, while the directory read
fifteen times over (15 x 100 x 100 employees = 416,641) does not come close.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any, Final

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    is_leaf_type,
)
from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext

from datastore.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from graphql_api.limits.bulk_rows import input_rows

LEAF_WEIGHT: Final = Fraction(1, 4)
# A list that is not a connection (an audit event's field changes): at most one entry per
# field of the entity changed, and no entity has more than this many fields.
PLAIN_LIST_ITEMS: Final = 16


def _is_list(type_: GraphQLOutputType) -> bool:
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    return isinstance(type_, GraphQLList)


class CostCounter:
    """The cost of an operation in a schema, with its fragments and variables."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self._memo: dict[tuple[str, str, int], Fraction] = {}
        # Items a plain list holds: PLAIN_LIST_ITEMS, or a bulk field's row count inside it.
        self._plain_list_items = PLAIN_LIST_ITEMS

    def operation(self, operation: OperationDefinitionNode) -> Fraction:
        root = {
            OperationType.QUERY: self.schema.query_type,
            OperationType.MUTATION: self.schema.mutation_type,
            OperationType.SUBSCRIPTION: self.schema.subscription_type,
        }[operation.operation]
        return Fraction(0) if root is None else self.selection_set(operation.selection_set, root, frozenset())

    def selection_set(
        self, selection_set: SelectionSetNode | None, parent: GraphQLNamedType, visiting: frozenset[str]
    ) -> Fraction:
        if selection_set is None:
            return Fraction(0)
        total = Fraction(0)
        spread: set[str] = set()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += self.field(selection, parent, visiting)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = parent if condition is None else self.schema.get_type(condition.name.value)
                if inner is not None:
                    total += self.selection_set(selection.selection_set, inner, visiting)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is None or name in visiting or name in spread:
                    continue  # execution collects a fragment once per selection set
                spread.add(name)
                key = (name, parent.name, self._plain_list_items)
                if key not in self._memo:
                    inner = self.schema.get_type(fragment.type_condition.name.value)
                    self._memo[key] = (
                        Fraction(0)
                        if inner is None
                        else self.selection_set(fragment.selection_set, inner, visiting | {name})
                    )
                total += self._memo[key]
        return total

    def field(self, node: FieldNode, parent: GraphQLNamedType, visiting: frozenset[str]) -> Fraction:
        name = node.name.value
        if name == "__typename":
            return LEAF_WEIGHT
        if not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) or name not in parent.fields:
            return Fraction(0)  # introspection, or an error validation already reported
        definition = parent.fields[name]
        named = get_named_type(definition.type)
        if is_leaf_type(named):
            return LEAF_WEIGHT
        if named.name.endswith("Connection"):
            return 1 + self.connection(node, named, visiting)
        rows = input_rows(node, self.variables)
        if rows is not None:
            outer, self._plain_list_items = self._plain_list_items, rows
            try:
                return 1 + rows + self.selection_set(node.selection_set, named, visiting)
            finally:
                self._plain_list_items = outer
        one = 1 + self.selection_set(node.selection_set, named, visiting)
        return self._plain_list_items * one if _is_list(definition.type) else one

    def connection(self, node: FieldNode, connection: GraphQLNamedType, visiting: frozenset[str]) -> Fraction:
        """What a connection's selections cost: ``edges`` once per item, the rest once."""
        first = self.first(node)
        total = Fraction(0)
        for selection in self._fields(node.selection_set, connection, visiting):
            if selection.name.value == "edges" and isinstance(connection, GraphQLObjectType):
                edge = get_named_type(connection.fields["edges"].type)
                total += first * self.selection_set(selection.selection_set, edge, visiting)
            elif selection.name.value == "pageInfo" and isinstance(connection, GraphQLObjectType):
                page_info = get_named_type(connection.fields["pageInfo"].type)
                total += self.selection_set(selection.selection_set, page_info, visiting)
            else:
                total += self.field(selection, connection, visiting)
        return total

    def _fields(
        self, selection_set: SelectionSetNode | None, parent: GraphQLNamedType, visiting: frozenset[str]
    ) -> Iterator[FieldNode]:
        """The fields of a selection set with its fragments flattened (a fragment once)."""
        spread: set[str] = set()
        for selection in () if selection_set is None else selection_set.selections:
            if isinstance(selection, FieldNode):
                yield selection
            elif isinstance(selection, InlineFragmentNode):
                yield from self._fields(selection.selection_set, parent, visiting)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is not None and name not in visiting and name not in spread:
                    spread.add(name)
                    yield from self._fields(fragment.selection_set, parent, visiting | {name})

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
    document: Any,
    variables: Mapping[str, Any] | None = None,
    operation_name: str | None = None,
) -> int:
    """The cost of ``document``'s operation (the costliest if it has several), rounded up."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    counter = CostCounter(schema, fragments, variables or {})
    operations = [
        d
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
        and (operation_name is None or (d.name is not None and d.name.value == operation_name))
    ]
    return math.ceil(max((counter.operation(op) for op in operations), default=Fraction(0)))


# MaxCost leaves its figure on the operation's execution context (one per operation, so a
# batch's operations keep their own), for whatever admits the request next to charge it.
_COST_ATTRIBUTE: Final = "hr_query_cost"


def computed_cost(execution: ExecutionContext) -> int | None:
    """The cost MaxCost computed for this operation; None if it has not run (or was refused first)."""
    cost = getattr(execution, _COST_ATTRIBUTE, None)
    return cost if isinstance(cost, int) else None


class MaxCost(SchemaExtension):
    def __init__(self, max_cost: int) -> None:
        self.max_cost = max_cost

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is not None and context.result is None:
            cost = query_cost(context.schema._schema, document, context.variables, context.operation_name)
            # ExecutionContext is a plain dataclass with no field for it (computed_cost reads it).
            setattr(context, _COST_ATTRIBUTE, cost)
            if cost > self.max_cost:
                context.result = GraphQLExecutionResult(
                    data=None,
                    errors=[
                        GraphQLError(
                            f"the query costs {cost}; at most {self.max_cost} is allowed "
                            "(every object and value it can return counts; ask for less with `first`)",
                            extensions={"limit": "cost", "cost": cost, "maxCost": self.max_cost},
                        )
                    ],
                )
        yield
