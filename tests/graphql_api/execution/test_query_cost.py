"""The cost formula itself, without a server: the documented and the bench's queries fit under
the default limit, and the abusive directory query does not (graphql_api/execution/query_cost.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import (
    FieldNode,
    GraphQLSchema,
    NameNode,
    OperationDefinitionNode,
    SelectionSetNode,
    Visitor,
    parse,
    print_ast,
    visit,
)

from bench.queries import Q1, Q2, Q3, Q7, q6
from graphql_api.execution.analysis import root_fields
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.query_cost import query_cost
from graphql_api.schema.executable import build_schema
from graphql_api.settings.api import ApiSettings
from tests.graphql_api.limits.test_limits import fifteen_aliases
from tests.paths import BULK_ONBOARDING, EXAMPLE_QUERIES, MUTATIONS, graphql_blocks

DEFAULT = ApiSettings.from_env({}).max_cost


@pytest.fixture(scope="module")
def schema() -> GraphQLSchema:
    return graphql_schema(build_schema([]))


def documented_operations() -> list[str]:
    """The four example queries, moveEmployee's example and the import's, in the docs' order."""
    blocks = graphql_blocks(EXAMPLE_QUERIES, MUTATIONS, BULK_ONBOARDING)
    assert len(blocks) == 6, f"docs/api should show 6 example operations, found {len(blocks)}"
    return blocks


def cost(schema: GraphQLSchema, query: str) -> int:
    return query_cost(schema, parse(query))


@pytest.mark.parametrize("query", documented_operations())
def test_cost__documented_example__under_the_default(schema: GraphQLSchema, query: str) -> None:
    assert cost(schema, query) <= DEFAULT


@pytest.mark.parametrize("query", [Q1, Q2, Q3], ids=["Q1", "Q2", "Q3"])
def test_cost__bench_query__under_the_default(schema: GraphQLSchema, query: str) -> None:
    assert cost(schema, query) <= DEFAULT


def test_cost__bench_q6__the_most_the_default_admits(schema: GraphQLSchema) -> None:
    """Q6 (bench/queries.py) fills the default limits: cost within 2%, aliases and depth at most."""
    from graphql_api.limits.aliases import alias_count
    from graphql_api.limits.depth import document_depth

    settings = ApiSettings.from_env({})
    pages = [("ASC", None), *[("ASC", "cursor")] * 9, ("DESC", None), *[("DESC", "cursor")] * 3]
    document = parse(q6(pages))
    assert 0.98 * DEFAULT <= cost(schema, q6(pages)) <= DEFAULT
    operation = document.definitions[0]
    assert alias_count(operation.selection_set, {}, {}) <= settings.max_aliases
    assert document_depth(operation.selection_set, {}) <= settings.max_depth


def test_cost__bench_q7__over_the_default(schema: GraphQLSchema) -> None:
    """Q7, the whole tree, is past the default: the bench runs it with MAX_QUERY_COST raised."""
    assert cost(schema, Q7) > DEFAULT


def test_cost__worked_examples__match_the_docs(schema: GraphQLSchema) -> None:
    # The figures docs/security/query-cost.md shows, computed by the code.
    assert [cost(schema, q) for q in (Q1, Q2, Q3)] == [2547, 3797, 30]
    examples = [q for q in documented_operations() if "importEmployees" not in q]
    assert [cost(schema, q) for q in examples] == [3148, 590, 33, 60, 7]
    # A bulk mutation's cost follows its rows: the documented import, with 100 and with 1.
    (bulk,) = [q for q in documented_operations() if "importEmployees" in q]
    assert [query_cost(schema, parse(bulk), {"input": {"rows": [{}] * n}}) for n in (100, 1)] == [577, 8]
    assert cost(schema, fifteen_aliases()) == 416641
    one_directory = fifteen_aliases().split(" d1:")[0] + " } }"
    assert cost(schema, one_directory) == 27777  # one alias: 100 x 100 employees, already over


def test_cost__aliases__each_counted(schema: GraphQLSchema) -> None:
    one = "{ me { email } }"
    two = "{ a: me { email } b: me { email } }"
    assert (cost(schema, one), cost(schema, two)) == (2, 3)  # 1 + 1/4 rounds up; 2 x 5/4 = 2.5


def test_cost__fragments_and_variables__resolved(schema: GraphQLSchema) -> None:
    inline = "{ organization { departments(first: 10) { edges { node { name } } } } }"
    spread = """query($n: Int!) { organization { departments(first: $n) { ...D } } }
      fragment D on DepartmentConnection { edges { node { name } } }"""
    assert cost(schema, inline) == 2 + 10 * 1.25 + 0.5  # 14.5 rounds up to 15
    assert query_cost(schema, parse(spread), {"n": 10}) == 15


def test_cost__page_info__counted_once_not_per_edge(schema: GraphQLSchema) -> None:
    base = "{ organization { departments(first: 100) { edges { node { id } } } } }"
    with_page = base.replace("} } } } }", "} } pageInfo { hasNextPage endCursor } } } }")
    assert cost(schema, with_page) - cost(schema, base) == 1  # 2 leaves = 1/2, rounded up


# --- __typename costs nothing: a caching client's documents cost what curl's do --------------------


def with_typename(query: str) -> str:
    """``query`` as Apollo Client and urql send it: ``__typename`` added to every selection set
    but the operation's own (Apollo's addTypenameToDocument, urql's formatDocument)."""
    document = parse(query)

    class AddTypename(Visitor):
        def enter_selection_set(self, node: SelectionSetNode, _key: Any, parent: Any, *_args: Any) -> SelectionSetNode:
            if isinstance(parent, OperationDefinitionNode) or any(
                isinstance(s, FieldNode) and s.name.value == "__typename" for s in node.selections
            ):
                return node
            typename = FieldNode(name=NameNode(value="__typename"), arguments=(), directives=())
            return SelectionSetNode(selections=(*node.selections, typename))

    return print_ast(visit(document, AddTypename()))


def test_cost__typename__nothing(schema: GraphQLSchema) -> None:
    assert cost(schema, "{ me { email __typename } }") == cost(schema, "{ me { email } }") == 2
    assert cost(schema, "{ __typename }") == 0


@pytest.mark.parametrize("query", [*documented_operations(), Q1, Q2, Q3])
def test_cost__as_a_caching_client_sends_it__the_same(schema: GraphQLSchema, query: str) -> None:
    variables = {"input": {"rows": [{}] * 100}} if "importEmployees" in query else None
    sent = with_typename(query)
    assert sent.count("__typename") > 2
    assert query_cost(schema, parse(sent), variables) == query_cost(schema, parse(query), variables)


def test_cost__typename_in_introspection__nothing(schema: GraphQLSchema) -> None:
    plain = "{ __schema { types { name fields { name } } } }"
    assert cost(schema, with_typename(plain)) == cost(schema, plain)


def test_root_fields__typename__no_write(schema: GraphQLSchema) -> None:
    """A mutation's charge counts its writes: ``__typename`` beside them is none."""
    mutation = 'mutation { createDepartment(input: {name: "X"}) { department { id } } __typename }'
    assert root_fields(schema, parse(mutation), None, None) == 1
