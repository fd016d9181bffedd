"""The documents clients run, each analysed once (graphql_api/execution/documents.py).

The cost, the count of root fields, the plan and the relations a page loads are worked out
once per (document, operation, the variables they read); a repeated request computes none of
them, and a variable they read (``first``, a ``@skip`` condition) gets its own figure.
"""

from __future__ import annotations

from typing import Any

from graphql import OperationDefinitionNode, parse

from graphql_api.app import create_app
from graphql_api.execution.analysis import analyse
from graphql_api.execution.documents import Documents
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.schema.executable import build_schema
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.fixtures import Api, Demo
from tests.graphql_api.live import serving

SCHEMA = graphql_schema(build_schema([]))
DEPARTMENTS = (
    "query Departments($n: Int, $skip: Boolean = false, $after: String) { organization { "
    "departments(first: $n, after: $after) { edges { node { name manager @skip(if: $skip) { email } } } } } }"
)


def analysed(cache: Documents, text: str, variables: dict[str, Any]) -> tuple[int, int]:
    document = cache.get(text) or cache.add(text, parse(text))
    analyses = document.operation(next(iter(operation_names(text))))
    assert analyses is not None
    found = analyses.analysis(SCHEMA, variables, None)
    return found.cost, found.root_fields


def operation_names(text: str) -> list[str | None]:
    return [d.name.value if d.name else None for d in parse(text).definitions if isinstance(d, OperationDefinitionNode)]


def test_cache__same_document_and_variables__computed_once() -> None:
    cache = Documents()
    first = analysed(cache, DEPARTMENTS, {"n": 10})
    assert analysed(cache, DEPARTMENTS, {"n": 10}) == first
    assert cache.costs_computed == 1


def test_cache__first_by_variable__its_own_cost() -> None:
    cache = Documents()
    ten, fifty = analysed(cache, DEPARTMENTS, {"n": 10}), analysed(cache, DEPARTMENTS, {"n": 50})
    assert fifty[0] > ten[0]
    assert analysed(cache, DEPARTMENTS, {"n": 10}) == ten
    assert cache.costs_computed == 2


def test_cache__skip_by_variable__its_own_cost() -> None:
    cache = Documents()
    shown, skipped = analysed(cache, DEPARTMENTS, {"n": 10}), analysed(cache, DEPARTMENTS, {"n": 10, "skip": True})
    assert skipped[0] < shown[0]
    assert cache.costs_computed == 2


def test_cache__variable_it_does_not_read__same_entry() -> None:
    cache = Documents()
    analysed(cache, DEPARTMENTS, {"n": 10, "after": "a"})
    analysed(cache, DEPARTMENTS, {"n": 10, "after": "b"})
    assert cache.costs_computed == 1


def test_cache__true_and_one__not_the_same_key() -> None:
    cache = Documents()
    analysed(cache, DEPARTMENTS, {"n": 1})
    analysed(cache, DEPARTMENTS, {"n": True})  # not an Int: execution refuses it; not keyed as 1
    assert cache.costs_computed == 2


def test_cache__list_for_a_variable__analysed_uncached_without_error() -> None:
    cache = Documents()
    expected = analyse(SCHEMA, parse(DEPARTMENTS), {"n": [1, 2]}, None)
    assert analysed(cache, DEPARTMENTS, {"n": [1, 2]}) == (expected.cost, expected.root_fields)
    assert analysed(cache, DEPARTMENTS, {"n": [1, 2]}) == (expected.cost, expected.root_fields)
    assert cache.costs_computed == 2


def test_server__repeated_request__nothing_parsed_validated_or_analysed_again(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, demo: Demo
) -> None:
    app = create_app(new_datastore(table_name), api_settings)
    documents: Documents = app.state.documents

    def counts() -> tuple[int, int, int, int]:
        return documents.parses, documents.costs_computed, documents.plans_compiled, documents.relation_plans_built

    with serving(app) as http:
        alice = Api(http, api_settings).as_(demo.person("alice@acme.co"))
        first = alice.data(DEPARTMENTS, {"n": 5})
        assert first["organization"]["departments"]["edges"], first
        assert counts() == (1, 1, 1, 1)

        assert alice.data(DEPARTMENTS, {"n": 5}) == first
        assert counts() == (1, 1, 1, 1)

        alice.data(DEPARTMENTS, {"n": 6})  # another cost; the same plan and relations
        assert counts() == (1, 2, 1, 1)

        skipped = alice.data(DEPARTMENTS, {"n": 5, "skip": True})  # another cost, plan and relations
        assert counts() == (1, 3, 2, 2)
        assert all("manager" not in edge["node"] for edge in skipped["organization"]["departments"]["edges"])
        assert documents.planned_runs == 4 and documents.fallbacks == 0


IMPORT = (
    "mutation Import($input: ImportEmployeesInput!) { importEmployees(input: $input) { created results { status } } }"
)


def rows(n: int, tag: str) -> dict[str, Any]:
    return {"input": {"rows": [{"email": f"{tag}{i}@acme.co", "firstName": "A", "lastName": "B"} for i in range(n)]}}


def test_cache__input_object__keyed_by_its_row_count() -> None:
    cache = Documents()
    three = analysed(cache, IMPORT, rows(3, "a"))
    assert analysed(cache, IMPORT, rows(3, "b")) == three  # other rows, the same count: the same cost
    assert cache.costs_computed == 1
    five = analysed(cache, IMPORT, rows(5, "a"))
    assert five[0] > three[0]
    assert five == (analyse(SCHEMA, parse(IMPORT), rows(5, "c"), None).cost, 1)
    assert cache.costs_computed == 2


def test_document__one_entry_per_text__and_operations_only_those_it_has() -> None:
    documents = Documents()
    text = "query A { me { email } } query B { organization { name } }"
    document = documents.add(text, parse(text))
    assert documents.get(text) is document
    assert documents.get(text + " ") is None
    assert document.operation("A") is document.operation("A")
    assert document.operation("A") is not document.operation("B")
    # Whatever names a client sends, the entry keeps only the document's own operations.
    assert document.operation("C") is None and document.operation(None) is None


def test_document__variables_read_once__each_figure_keyed_by_its_own() -> None:
    text = (
        "query Q($n: Int, $skip: Boolean = false, $x: String) { organization { "
        "departments(first: $n, after: $x) @include(if: true) { edges { node { name manager @skip(if: $skip) "
        "{ email } } } } } }"
    )
    document = Documents().add(text, parse(text))
    assert document.conditions == ("skip",)
    assert document.cost_reads == ("n", "skip")  # ``after`` changes neither the cost nor the plan


def test_documents__bounded__least_recently_used_out() -> None:
    documents = Documents(max_entries=2)
    texts = ["{ me { email } }", "{ me { id } }", "{ me { role } }"]
    first = documents.add(texts[0], parse(texts[0]))
    documents.add(texts[1], parse(texts[1]))
    assert documents.get(texts[0]) is first  # used: the second is now the oldest
    documents.add(texts[2], parse(texts[2]))
    assert documents.get(texts[1]) is None
    assert documents.get(texts[0]) is first
