"""What introspection costs (graphql_api/execution/introspection_cost.py): exactly what it answers."""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any, Final

import pytest
from graphql import GraphQLSchema, get_introspection_query, graphql_sync, parse

from graphql_api.execution.introspection_cost import PastCeiling
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.query_cost import LEAF_WEIGHT, query_cost
from graphql_api.schema.executable import build_schema
from graphql_api.settings.api import ApiSettings

DEFAULT: Final = ApiSettings.from_env({}).max_cost
# GraphiQL's introspection query, every option on (descriptions too); codegen's is the default one.
GRAPHIQL: Final = get_introspection_query(
    descriptions=True,
    specified_by_url=True,
    directive_is_repeatable=True,
    schema_description=True,
    input_value_deprecation=True,
    one_of=True,
)
CODEGEN: Final = get_introspection_query()


@pytest.fixture(scope="module")
def schema() -> GraphQLSchema:
    return graphql_schema(build_schema([]))


def answered(value: Any) -> Fraction:
    """What an answer holds, as the cost counts it: 1 an object, a leaf per value, null or []."""
    if isinstance(value, dict):
        return 1 + sum((answered(item) for item in value.values()), Fraction(0))
    if isinstance(value, list) and value:
        return sum((answered(item) for item in value), Fraction(0))
    return LEAF_WEIGHT


def answer_of(schema: GraphQLSchema, query: str, variables: dict[str, Any] | None = None) -> Fraction:
    result = graphql_sync(schema, query, variable_values=variables)
    assert result.errors is None and result.data is not None, result.errors
    return answered(result.data) - 1  # the response's own data object is no field's


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        (GRAPHIQL, None),
        (CODEGEN, None),
        (get_introspection_query(descriptions=False), None),
        ('{ __type(name: "Employee") { name fields { name type { kind ofType { name } } } } }', None),
        ("query T($t: String!) { __type(name: $t) { name enumValues { name } } }", {"t": "EmployeeOrder"}),
        ('{ __type(name: "NoSuchType") { name } }', None),
        ("{ __schema { types { fields { type { ofType { ofType { fields { name } } } } } } } }", None),
        ("{ __schema { directives { name locations args { name } } } }", None),
        ("{ __schema { queryType { name } } }", None),
    ],
    ids=[
        "graphiql",
        "codegen",
        "no-descriptions",
        "type",
        "type-by-variable",
        "no-such-type",
        "nested",
        "directives",
        "small",
    ],
)
def test_cost__introspection__exactly_what_it_answers(
    schema: GraphQLSchema, query: str, variables: dict[str, Any] | None
) -> None:
    counted = query_cost(schema, parse(query), variables)
    expected = answer_of(schema, query, variables)
    print(f"cost {counted} (answer holds {expected})")
    assert counted == expected.__ceil__()


def test_cost__graphiql_introspection__within_the_default(schema: GraphQLSchema) -> None:
    cost = query_cost(schema, parse(GRAPHIQL))
    print(f"GraphiQL's introspection query costs {cost}; MAX_QUERY_COST is {DEFAULT}")
    # Room for the schema to grow: at most 60% of the default (half, until the Subscription
    # root and the webhook and sign-in mutations took it to 2563 of 5000).
    assert cost <= DEFAULT * 3 // 5


def fifteen_schemas(full: str = GRAPHIQL) -> str:
    """The issue's document: fifteen aliased ``__schema`` selections, each the full introspection."""
    selection = full[full.index("__schema") : full.index("fragment FullType")].strip().removesuffix("}").strip()
    body = selection.removeprefix("__schema").strip()
    fragments = full[full.index("fragment FullType") :]
    return "query Fifteen { " + " ".join(f"s{i}: __schema {body}" for i in range(15)) + " } " + fragments


def test_cost__fifteen_aliased_schemas__fifteen_times_one(schema: GraphQLSchema) -> None:
    fifteen = query_cost(schema, parse(fifteen_schemas()))
    assert fifteen == (15 * answer_of(schema, GRAPHIQL)).__ceil__() > DEFAULT


def test_cost__deprecated_elements__counted_whether_asked_or_not(schema: GraphQLSchema) -> None:
    asked = query_cost(schema, parse("{ __schema { types { fields(includeDeprecated: true) { name } } } }"))
    not_asked = query_cost(schema, parse("{ __schema { types { fields { name } } } }"))
    assert asked == not_asked


def test_ceiling__a_cheap_walk__the_exact_figure_either_side_of_it(schema: GraphQLSchema) -> None:
    """The walk stops only when its own work proves the cost past the ceiling: fifteen aliases
    of one fragment walk it once per type (memoised), so they are counted in full, then refused."""
    for document in (GRAPHIQL, fifteen_schemas()):
        assert query_cost(schema, parse(document), ceiling=DEFAULT) == query_cost(schema, parse(document))


# Many sibling selections over every field of every type, under the token limit (1,000).
DEAREST: Final = (
    "{ __schema { types { "
    + " ".join("fields { type { ofType { ofType { fields { name } } } } }" for _ in range(15))
    + " "
    + " ".join("fields { name }" for _ in range(150))
    + " } } }"
)


def test_ceiling__the_dearest_document_under_the_token_limit__refused_quickly(schema: GraphQLSchema) -> None:
    """The count itself is bounded work."""
    started = time.process_time()
    with pytest.raises(PastCeiling):
        query_cost(schema, parse(DEAREST), ceiling=DEFAULT)
    print(f"refused after {(time.process_time() - started) * 1000:.1f} ms of CPU")
