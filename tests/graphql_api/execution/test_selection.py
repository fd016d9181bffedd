"""The one selection walker (graphql_api/execution/selection.py), and every reader of a document agreeing.

Each document below is written twice: with fragments, inline fragments, nested fragments
and @skip/@include (literal, by variable, by a variable's default), and plainly, as the
fields that actually run. The query cost, the tenant charge's count of mutation fields,
the relations a page loads and the compiled plan must see the two alike.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import FieldNode, GraphQLSchema, OperationDefinitionNode, parse, visit
from graphql.execution.values import get_variable_values
from graphql.language import Visitor

from graphql_api.execution.analysis import root_fields
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.plan.compiler import Completion, CompletionKind, ObjectPlan, compile_operation
from graphql_api.execution.query_cost import query_cost
from graphql_api.execution.selection import Selections, fragments_of, operations_of, variable_values
from graphql_api.schema.executable import build_schema
from graphql_api.schema.types.department import Department
from graphql_api.schema.types.relations import RelationPlan, Selection

SCHEMA: GraphQLSchema = graphql_schema(build_schema([]))

FRAGMENTS = (
    "query { organization { ...Org } } "
    "fragment Org on Organization { departments(first: 5) { edges { node { "
    "...Dept ... on Department { manager { ...Person } } } } } } "
    "fragment Dept on Department { name ...Dept2 } "
    "fragment Dept2 on Department { headcount } "
    "fragment Person on Employee { email }",
    {},
    "{ organization { departments(first: 5) { edges { node { name headcount manager { email } } } } } }",
)
SKIPS = (
    "query($s: Boolean!, $i: Boolean = false, $n: Int) { organization { departments(first: $n) { edges { node { "
    "name manager @skip(if: $s) { email } ...M @include(if: $i) ... @skip(if: true) { id } "
    "employees(first: 50) @include(if: $i) { edges { node { email department { name } } } } } } } } } "
    "fragment M on Department { manager { firstName } }",
    {"s": True, "n": 7},
    "{ organization { departments(first: 7) { edges { node { name } } } } }",
)
INCLUDES = (
    "query($s: Boolean = false, $i: Boolean!) { organization { departments { edges { node { "
    "...M @skip(if: $s) employees(first: 50) @include(if: $i) { edges { node { email } } } "
    "id @include(if: false) } } } } } "
    "fragment M on Department { manager @include(if: true) { firstName } }",
    {"i": True},
    "{ organization { departments { edges { node { manager { firstName } "
    "employees(first: 50) { edges { node { email } } } } } } } }",
)
MUTATION = (
    'mutation($s: Boolean!) { a: createDepartment(input: {name: "A"}) { department { id } } '
    "...W @skip(if: $s) "
    '... on Mutation @include(if: false) { c: createDepartment(input: {name: "C"}) { department { id } } } } '
    'fragment W on Mutation { b: createDepartment(input: {name: "B"}) { department { id name } } }',
    {"s": True},
    'mutation { a: createDepartment(input: {name: "A"}) { department { id } } }',
)
QUERIES = [FRAGMENTS, SKIPS, INCLUDES]


def shape(plan: ObjectPlan) -> dict[str, Any]:
    """A compiled plan's response keys, level by level."""
    return {field.key: completion_shape(field.completion) for field in plan.fields}


def completion_shape(completion: Completion | None) -> Any:
    if completion is None or completion.kind is CompletionKind.LEAF:
        return "leaf"
    if completion.kind is CompletionKind.LIST:
        assert completion.item is not None
        return [completion_shape(completion.item)]
    if completion.kind is CompletionKind.OBJECT:
        assert completion.plan is not None
        return shape(completion.plan)
    return {name: shape(plan) for name, plan in completion.plans.items()}


def compiled(document: str, inputs: dict[str, Any]) -> dict[str, Any]:
    parsed = parse(document)
    (operation,) = operations_of(parsed, None)
    coerced = get_variable_values(SCHEMA, operation.variable_definitions or (), inputs)
    assert not isinstance(coerced, list), coerced
    return shape(compile_operation(SCHEMA, operation, fragments_of(parsed), coerced).root)


def named(plan: RelationPlan) -> dict[str, Any]:
    return {relation.field: named(inner) for relation, inner in plan}


def relations_of(document: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The relations a page of ``departments`` loads."""
    parsed = parse(document)
    (operation,) = operations_of(parsed, None)
    found: list[FieldNode] = []

    class Find(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            if node.name.value == "departments":
                found.append(node)

    visit(parsed, Find())
    variables = variable_values(SCHEMA, operation, inputs)
    return named(Selection(fragments_of(parsed), variables).connection_plan(Department, found))


@pytest.mark.parametrize(("document", "inputs", "plain"), QUERIES, ids=["fragments", "skip", "include"])
def test_readers__fragments_and_conditions__same_as_the_plain_document(
    document: str, inputs: dict[str, Any], plain: str
) -> None:
    assert query_cost(SCHEMA, parse(document), inputs) == query_cost(SCHEMA, parse(plain))
    assert compiled(document, inputs) == compiled(plain, {})
    assert relations_of(document, inputs) == relations_of(plain, {})


def test_readers__mutation_under_skip__neither_costed_nor_charged() -> None:
    document, inputs, plain = MUTATION
    assert query_cost(SCHEMA, parse(document), inputs) == query_cost(SCHEMA, parse(plain))
    assert root_fields(SCHEMA, parse(document), None, inputs) == root_fields(SCHEMA, parse(plain), None, {}) == 1


def test_cost__skip_by_variable__follows_the_variable() -> None:
    document, _, _ = SKIPS
    skipped = query_cost(SCHEMA, parse(document), {"s": True})
    assert query_cost(SCHEMA, parse(document), {"s": False}) > skipped
    assert query_cost(SCHEMA, parse(document), {"s": True, "i": True}) > skipped


def test_cost__first_by_variable_default__the_default_counts() -> None:
    document = "query($n: Int = 100) { organization { departments(first: $n) { edges { node { name } } } } }"
    assert query_cost(SCHEMA, parse(document), {}) == query_cost(
        SCHEMA, parse("{ organization { departments(first: 100) { edges { node { name } } } } }")
    )


def field_names(document: str, inputs: dict[str, Any], applies: Any = None) -> list[tuple[str, str | None]]:
    parsed = parse(document)
    operation = parsed.definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    selections = Selections(fragments_of(parsed), variable_values(SCHEMA, operation, inputs))
    return [(node.name.value, on) for node, on in selections.fields([operation.selection_set], applies)]


def test_fields__a_fragment_spread_twice__collected_once_with_its_type_condition() -> None:
    document = "{ ...Q ...Q ... on Query { me { id } } } fragment Q on Query { organization { id } }"
    assert field_names(document, {}) == [("organization", "Query"), ("me", "Query")]


def test_fields__type_condition_rejected__left_out() -> None:
    document = "{ ... on Query { me { id } } ...Q } fragment Q on Query { organization { id } }"
    assert field_names(document, {}, applies=lambda condition: False) == []


def test_fields__skip_and_include_together__both_must_let_it_run() -> None:
    document = "query($a: Boolean!, $b: Boolean!) { me @skip(if: $a) @include(if: $b) { id } }"
    assert field_names(document, {"a": False, "b": True}) == [("me", None)]
    assert field_names(document, {"a": True, "b": True}) == []
    assert field_names(document, {"a": False, "b": False}) == []
