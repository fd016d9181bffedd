"""The compiler's object plans: which types need a resolve info for their type check."""

from __future__ import annotations

from graphql import GraphQLField, GraphQLObjectType, GraphQLString, parse
from graphql.execution.values import get_variable_values

from graphql_api.plan.compiler import Kind, ObjectPlan, _info_free_type_check, compile_operation
from graphql_api.schema import build_schema
from graphql_api.selection import fragments_of, operations_of

SCHEMA = build_schema([])._schema


def node_plan(document: str) -> ObjectPlan:
    """The plan of the objects of the first connection's nodes in ``document``."""
    parsed = parse(document)
    (operation,) = operations_of(parsed, None)
    variables = get_variable_values(SCHEMA, (), {})
    assert not isinstance(variables, list)
    plan = compile_operation(SCHEMA, operation, fragments_of(parsed), variables).root
    while True:
        field = plan.fields[0]
        completion = field.completion
        assert completion is not None
        while completion.kind is Kind.LIST:
            assert completion.item is not None
            completion = completion.item
        assert completion.plan is not None
        if field.key == "node":
            return completion.plan
        plan = completion.plan


def test_object_plan__strawberry_is_type_of__no_info_built() -> None:
    plan = node_plan("{ organization { departments { edges { node { name } } } } }")
    assert plan.type.name == "Department"
    assert plan.type.is_type_of is not None  # Department implements Node
    assert plan.info_free_type_check


def test_object_plan__is_type_of_of_its_own__info_built() -> None:
    declared = GraphQLObjectType("Own", {"a": GraphQLField(GraphQLString)}, is_type_of=lambda value, info: True)
    assert not _info_free_type_check(declared)
    assert not _info_free_type_check(GraphQLObjectType("None", {"a": GraphQLField(GraphQLString)}))
