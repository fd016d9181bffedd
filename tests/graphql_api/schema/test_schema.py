"""The schema as clients and code generators see it: schema.graphql, introspection, descriptions."""

from __future__ import annotations

from typing import Any

import graphql
import httpx
import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    build_client_schema,
    get_introspection_query,
    is_introspection_type,
    is_specified_scalar_type,
    lexicographic_sort_schema,
    print_schema,
)

from graphql_api.schema.executable import schema_sdl, sdl_of
from tests.graphql_api.fixtures import GraphQLClient
from tests.paths import ROOT


def committed_sdl() -> str:
    return (ROOT / "schema.graphql").read_text()


def sorted_sdl(schema: GraphQLSchema) -> str:
    return print_schema(lexicographic_sort_schema(schema))


@pytest.fixture(scope="module")
def live(http: httpx.Client) -> GraphQLSchema:
    """The schema as the running server describes it through introspection over HTTP."""
    query = get_introspection_query(
        descriptions=True,
        specified_by_url=True,
        directive_is_repeatable=True,
        schema_description=True,
        input_value_deprecation=True,
    )
    body: dict[str, Any] = GraphQLClient(http).query(query)
    assert "errors" not in body, body.get("errors")
    return build_client_schema(body["data"])


def test_schema_file__equals_the_schema_the_code_builds() -> None:
    assert committed_sdl() == schema_sdl(), "run `python server.py export-schema` and commit schema.graphql"


def test_schema_file__prints_exactly_as_live_introspection(live: GraphQLSchema) -> None:
    built = graphql.build_schema(committed_sdl())
    assert sorted_sdl(built) == sorted_sdl(live)


def test_schema_file__roots_are_query_mutation_and_subscription() -> None:
    built = graphql.build_schema(committed_sdl())
    assert built.query_type is not None and built.query_type.name == "Query"
    assert built.mutation_type is not None and built.mutation_type.name == "Mutation"
    assert built.subscription_type is not None and built.subscription_type.name == "Subscription"
    assert sorted(built.subscription_type.fields) == [
        "applicationChanged",
        "auditEventAdded",
        "employeeChanged",
        "jobPostingChanged",
        "myApplicationChanged",
    ]


def test_schema_file__is_sorted_and_stable() -> None:
    """Printing the file's own schema again gives the file back: no churn between exports."""
    committed = committed_sdl()
    assert sdl_of(graphql.build_schema(committed)) == committed
    assert committed.startswith("schema {\n  query: Query\n  mutation: Mutation\n  subscription: Subscription\n}\n\n")


def test_sdl_of__roots_named_query_and_mutation__declares_them_in_a_schema_block() -> None:
    # graphql-core omits the block here; the file keeps it so that readers which guess roots
    # from type names find exactly these two.
    schema = graphql.build_schema("type Query { a: Int }\ntype Mutation { b: Int }")
    assert not print_schema(schema).startswith("schema")
    printed = sdl_of(schema)
    assert printed.startswith("schema {\n  query: Query\n  mutation: Mutation\n}\n\n")
    rebuilt = graphql.build_schema(printed)
    assert rebuilt.subscription_type is None
    assert sorted_sdl(rebuilt) == sorted_sdl(schema)


def test_sdl_of__type_named_subscription_that_is_not_a_root__stays_an_ordinary_type() -> None:
    schema = graphql.build_schema(
        "schema { query: Query mutation: Mutation }\n"
        "type Query { a: Subscription }\ntype Mutation { b: Int }\ntype Subscription { c: Int }"
    )
    printed = sdl_of(schema)
    assert printed.count("schema {") == 1
    rebuilt = graphql.build_schema(printed)
    assert rebuilt.subscription_type is None
    assert rebuilt.get_type("Subscription") is not None


@pytest.mark.parametrize(
    "sdl",
    ["schema { query: Root }\ntype Root { a: Int }", '"""The API."""\nschema { query: Query }\ntype Query { a: Int }'],
)
def test_sdl_of__block_graphql_core_prints_itself__is_not_doubled(sdl: str) -> None:
    printed = sdl_of(graphql.build_schema(sdl))
    assert printed.count("schema {") == 1
    assert sorted_sdl(graphql.build_schema(printed)) == sorted_sdl(graphql.build_schema(sdl))


def missing_descriptions(schema: GraphQLSchema) -> list[str]:
    """Every type, field, argument, input field and enum value without a description."""
    missing: list[str] = []
    for name, kind in sorted(schema.type_map.items()):
        if is_introspection_type(kind) or is_specified_scalar_type(kind):
            continue
        if not (kind.description or "").strip():
            missing.append(name)
        if isinstance(kind, GraphQLObjectType | GraphQLInterfaceType):
            for field_name, field in kind.fields.items():
                if not (field.description or "").strip():
                    missing.append(f"{name}.{field_name}")
                missing += [
                    f"{name}.{field_name}({arg_name})"
                    for arg_name, arg in field.args.items()
                    if not (arg.description or "").strip()
                ]
        elif isinstance(kind, GraphQLInputObjectType):
            missing += [
                f"{name}.{field_name}"
                for field_name, field in kind.fields.items()
                if not (field.description or "").strip()
            ]
        elif isinstance(kind, GraphQLEnumType):
            missing += [
                f"{name}.{value_name}"
                for value_name, value in kind.values.items()
                if not (value.description or "").strip()
            ]
    return missing


def test_live_schema__describes_every_type_field_argument_and_value(live: GraphQLSchema) -> None:
    assert missing_descriptions(live) == []


def test_missing_descriptions__lists_each_gap() -> None:
    schema = graphql.build_schema(
        '"""Root."""\ntype Query {\n  """Has one."""\n  a(x: Int): E\n  b: Int\n}\n'
        'enum E {\n  """Yes."""\n  ONE\n  TWO\n}\ninput I {\n  c: Int\n}\n'
        "type Unused {\n  d(i: I): Int\n}"
    )
    assert missing_descriptions(schema) == [
        "E",
        "E.TWO",
        "I",
        "I.c",
        "Query.a(x)",
        "Query.b",
        "Unused",
        "Unused.d",
        "Unused.d(i)",
    ]


def test_introspection__lists_the_node_types(anonymous: GraphQLClient) -> None:
    body = anonymous.query('{ __type(name: "Node") { possibleTypes { name } } }')
    names = {t["name"] for t in body["data"]["__type"]["possibleTypes"]}
    assert names == {"Organization", "BillingSubscription", "Department", "Employee", "JobPosting", "Application"}


def test_graphiql__page_loads_in_a_browser(http: httpx.Client) -> None:
    response = http.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()
