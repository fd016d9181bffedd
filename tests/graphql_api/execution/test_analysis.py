"""Query analysis kept for the process (limits/analysis.py, types/relations.RelationPlans).

The cost, the count of root fields and the relations a page loads are worked out once per
(document, operation, the variables they read); a repeated request computes none of them,
and a variable they read (``first``, a ``@skip`` condition) gets its own figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphql import parse

from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.execution.analysis import AnalysisCache, analyse
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.schema.executable import build_schema
from graphql_api.settings.api import ApiSettings
from tests.graphql_api.fixtures import Api, Demo
from tests.graphql_api.live import serving

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SCHEMA = graphql_schema(build_schema([]))
DEPARTMENTS = (
    "query Departments($n: Int, $skip: Boolean = false, $after: String) { organization { "
    "departments(first: $n, after: $after) { edges { node { name manager @skip(if: $skip) { email } } } } } }"
)


def analysed(cache: AnalysisCache, text: str, variables: dict[str, Any]) -> tuple[int, int]:
    found = cache.analysis(SCHEMA, text, parse(text), variables, None)
    return found.cost, found.root_fields


def test_cache__same_document_and_variables__computed_once() -> None:
    cache = AnalysisCache()
    first = analysed(cache, DEPARTMENTS, {"n": 10})
    assert analysed(cache, DEPARTMENTS, {"n": 10}) == first
    assert cache.computed == 1


def test_cache__first_by_variable__its_own_cost() -> None:
    cache = AnalysisCache()
    ten, fifty = analysed(cache, DEPARTMENTS, {"n": 10}), analysed(cache, DEPARTMENTS, {"n": 50})
    assert fifty[0] > ten[0]
    assert analysed(cache, DEPARTMENTS, {"n": 10}) == ten
    assert cache.computed == 2


def test_cache__skip_by_variable__its_own_cost() -> None:
    cache = AnalysisCache()
    shown, skipped = analysed(cache, DEPARTMENTS, {"n": 10}), analysed(cache, DEPARTMENTS, {"n": 10, "skip": True})
    assert skipped[0] < shown[0]
    assert cache.computed == 2


def test_cache__variable_it_does_not_read__same_entry() -> None:
    cache = AnalysisCache()
    analysed(cache, DEPARTMENTS, {"n": 10, "after": "a"})
    analysed(cache, DEPARTMENTS, {"n": 10, "after": "b"})
    assert cache.computed == 1


def test_cache__true_and_one__not_the_same_key() -> None:
    cache = AnalysisCache()
    analysed(cache, DEPARTMENTS, {"n": 1})
    analysed(cache, DEPARTMENTS, {"n": True})  # not an Int: execution refuses it; not keyed as 1
    assert cache.computed == 2


def test_cache__list_for_a_variable__analysed_uncached_without_error() -> None:
    cache = AnalysisCache()
    expected = analyse(SCHEMA, parse(DEPARTMENTS), {"n": [1, 2]}, None)
    assert analysed(cache, DEPARTMENTS, {"n": [1, 2]}) == (expected.cost, expected.root_fields)
    assert analysed(cache, DEPARTMENTS, {"n": [1, 2]}) == (expected.cost, expected.root_fields)
    assert cache.computed == 2


def test_server__repeated_request__neither_cost_nor_relations_recomputed(
    client: DynamoDBClient, table_name: str, api_settings: ApiSettings, demo: Demo
) -> None:
    app = create_app(Datastore(client, table_name), api_settings)
    analyses, relation_plans = app.state.analysis_cache, app.state.relation_plans
    with serving(app) as http:
        alice = Api(http, api_settings).as_(demo.person("alice@acme.co"))
        first = alice.data(DEPARTMENTS, {"n": 5})
        assert first["organization"]["departments"]["edges"], first
        assert (analyses.computed, relation_plans.built) == (1, 1)

        assert alice.data(DEPARTMENTS, {"n": 5}) == first
        assert (analyses.computed, relation_plans.built) == (1, 1)

        alice.data(DEPARTMENTS, {"n": 6})  # another cost, the same relations
        assert (analyses.computed, relation_plans.built) == (2, 1)

        skipped = alice.data(DEPARTMENTS, {"n": 5, "skip": True})  # another cost and plan
        assert (analyses.computed, relation_plans.built) == (3, 2)
        assert all("manager" not in edge["node"] for edge in skipped["organization"]["departments"]["edges"])


IMPORT = (
    "mutation Import($input: ImportEmployeesInput!) { importEmployees(input: $input) { created results { status } } }"
)


def rows(n: int, tag: str) -> dict[str, Any]:
    return {"input": {"rows": [{"email": f"{tag}{i}@acme.co", "firstName": "A", "lastName": "B"} for i in range(n)]}}


def test_cache__input_object__keyed_by_its_row_count() -> None:
    cache = AnalysisCache()
    three = analysed(cache, IMPORT, rows(3, "a"))
    assert analysed(cache, IMPORT, rows(3, "b")) == three  # other rows, the same count: the same cost
    assert cache.computed == 1
    five = analysed(cache, IMPORT, rows(5, "a"))
    assert five[0] > three[0]
    assert five == (analyse(SCHEMA, parse(IMPORT), rows(5, "c"), None).cost, 1)
    assert cache.computed == 2
