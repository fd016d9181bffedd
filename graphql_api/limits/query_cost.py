"""Maximum query cost, counting what the query can make the server load.

Every field that returns an object costs 1 (a load); scalars cost nothing. A connection
(a field whose type ends in ``Connection``) costs 1 for its Query and multiplies what is
selected inside it by its ``first`` (the default page size when omitted, the maximum page
size at most): ``departments(first: 10) { edges { node { manager { id } } } }`` costs
1 + 10 = 11. ``edges``, ``node`` under ``edges`` and ``pageInfo`` are free. Variables are
resolved, so the check runs after validation and before execution: a refused query never
touches DynamoDB.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
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

from datastore.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE

FREE_FIELDS = frozenset({"edges", "pageInfo", "__typename"})


class CostCounter:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self._memo: dict[tuple[str, bool], int] = {}

    def operation(self, operation: OperationDefinitionNode) -> int:
        root = {
            OperationType.QUERY: self.schema.query_type,
            OperationType.MUTATION: self.schema.mutation_type,
            OperationType.SUBSCRIPTION: self.schema.subscription_type,
        }[operation.operation]
        return 0 if root is None else self.selection_set(operation.selection_set, root, False, frozenset())

    def selection_set(
        self,
        selection_set: SelectionSetNode | None,
        parent: GraphQLNamedType,
        under_edges: bool,
        visiting: frozenset[str],
    ) -> int:
        if selection_set is None:
            return 0
        total = 0
        spread: set[str] = set()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += self.field(selection, parent, under_edges, visiting)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = parent if condition is None else self.schema.get_type(condition.name.value)
                if inner is not None:
                    total += self.selection_set(selection.selection_set, inner, under_edges, visiting)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is None or name in visiting or name in spread:
                    continue  # execution collects a fragment once per selection set
                spread.add(name)
                key = (name, under_edges)
                if key not in self._memo:
                    inner = self.schema.get_type(fragment.type_condition.name.value)
                    self._memo[key] = (
                        0
                        if inner is None
                        else self.selection_set(fragment.selection_set, inner, under_edges, visiting | {name})
                    )
                total += self._memo[key]
        return total

    def field(self, node: FieldNode, parent: GraphQLNamedType, under_edges: bool, visiting: frozenset[str]) -> int:
        name = node.name.value
        if not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) or name not in parent.fields:
            return 0  # introspection, or an error validation already reported
        named = get_named_type(parent.fields[name].type)
        if is_leaf_type(named):
            return 0
        inside = self.selection_set(node.selection_set, named, name == "edges", visiting)
        if name in FREE_FIELDS or (under_edges and name == "node"):
            return inside
        if named.name.endswith("Connection"):
            return 1 + self.first(node) * inside
        return 1 + inside

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


class MaxCost(SchemaExtension):
    def __init__(self, max_cost: int) -> None:
        self.max_cost = max_cost

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is not None and context.result is None:
            fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
            counter = CostCounter(context.schema._schema, fragments, context.variables or {})
            operations = [
                d
                for d in document.definitions
                if isinstance(d, OperationDefinitionNode)
                and (context.operation_name is None or (d.name is not None and d.name.value == context.operation_name))
            ]
            cost = max((counter.operation(op) for op in operations), default=0)
            if cost > self.max_cost:
                context.result = GraphQLExecutionResult(
                    data=None,
                    errors=[
                        GraphQLError(
                            f"the query costs {cost}; at most {self.max_cost} is allowed "
                            "(a connection multiplies what it selects by `first`)",
                            extensions={"limit": "cost", "cost": cost, "maxCost": self.max_cost},
                        )
                    ],
                )
        yield
