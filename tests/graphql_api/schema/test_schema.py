"""The schema as clients and code generators see it: schema.graphql, introspection, descriptions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
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
from tests.paths import DOCS, ROOT, graphql_blocks


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


EVOLVING = DOCS / "api" / "evolving-schema.md"


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def previous_schema_ref() -> str | None:
    """The schema.graphql to compare with: HEAD's when the working tree's differs from it, else
    the one before the last commit that changed it (HEAD's in a shallow clone); None outside
    a git checkout."""
    if _git("rev-parse", "--verify", "--quiet", "HEAD").returncode != 0:
        return None
    if _git("diff", "--quiet", "HEAD", "--", "schema.graphql").returncode != 0:
        return "HEAD"
    last = _git("log", "-1", "--format=%H", "--", "schema.graphql").stdout.strip()
    before = f"{last}~1"
    if not last or _git("cat-file", "-e", f"{before}:schema.graphql").returncode != 0:
        return "HEAD"
    return before


def acknowledged_breaking_changes() -> set[str]:
    """The breaking changes docs/api/evolving-schema.md lists as made on purpose."""
    section = EVOLVING.read_text().split("## Breaking changes made on purpose", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([A-Z_]+: .+)`$", section, re.M))


def test_schema_changes__since_the_previous_schema__no_client_operation_breaks_and_each_break_is_acknowledged(
    tmp_path: Path,
) -> None:
    """``schema-check`` against the previous schema.graphql, with the repository's own client
    operations (the front-end tests' and every example of the docs): a breaking change fails
    the suite until the page lists it, and one that breaks any of those operations fails it."""
    against = previous_schema_ref()
    if against is None:
        pytest.skip("not a git checkout: no previous schema.graphql to compare with")
    examples = {f"docs-{n}": text for n, text in enumerate(graphql_blocks(*sorted(DOCS.rglob("*.md"))))}
    manifest = tmp_path / "examples.json"
    manifest.write_text(json.dumps(examples))
    common = ["schema-check", "--against", against, "--skip-table", "--json"]
    frontend = ROOT / "tests" / "graphql_api" / "frontend"
    results = [
        subprocess.run(
            [sys.executable, "server.py", *common, "--documents", str(documents)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        for documents in (manifest, frontend)
    ]
    for result in results:
        assert result.returncode in (0, 1), result.stderr
        report = json.loads(result.stdout)
        assert report["failing"] == [], "an operation a client sends breaks: see `python server.py schema-check`"
        assert report["operationsChecked"] > 0
        breaking = {f"{change['type']}: {change['description']}" for change in report["breaking"]}
        unlisted = sorted(breaking - acknowledged_breaking_changes())
        assert unlisted == [], f"breaking changes since {against} that {EVOLVING.name} does not list"
