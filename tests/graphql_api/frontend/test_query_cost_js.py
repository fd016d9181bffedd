"""The client-side query cost function of docs/security/query-cost.md, run by Node, agrees with
the server: for every example query of the docs, as written and as Apollo Client sends it
(``__typename`` in every selection set), its figure is the server's ``extensions.cost.queryCost``
for the same request.

The function is the page's first ```js block, run as it is printed; graphql-js and Apollo
Client's ``addTypenameToDocument`` come from the Apollo Client test's pinned packages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from bench.queries import Q1, Q2, Q3
from tests.conftest import Tenant
from tests.graphql_api.execution.test_query_cost import documented_operations
from tests.graphql_api.fixtures import Api
from tests.graphql_api.frontend.tools import apollo_client_modules
from tests.graphql_api.limits.test_limits import fifteen_aliases
from tests.paths import QUERY_COST, ROOT, code_blocks

NODE = shutil.which("node")
HERE: Final = Path(__file__).parent / "query_cost"
ROW: Final = {"email": "ana@example.com", "firstName": "Ana", "lastName": "Lima", "role": "EMPLOYEE"}
MOVE: Final = {"input": {"id": "x", "departmentId": "y", "expectedVersion": 3, "idempotencyKey": "move-42"}}
# Beyond the pages' examples: fragments, an inline fragment, @skip/@include by variable, `first`
# by variable with and without its default, a plain list (an audit event's changes), three
# nested lists at the default page size (refused: the server still reports the cost).
EXTRA: Final = [
    (
        "query Page($n: Int = 7, $full: Boolean!) { organization { ...Org } me { ...Me @include(if: $full) } } "
        "fragment Org on Organization { departments(first: $n) { edges { cursor node { ...Dept } } } } "
        "fragment Dept on Department { name employees { edges { node { email ... on Employee { role } } } } } "
        "fragment Me on Employee { email department { name @skip(if: $full) headcount } }",
        {"full": True},
    ),
    ("query Page($n: Int = 7) { organization { departments(first: $n) { edges { node { name } } } } }", {"n": 150}),
    (
        "{ organization { auditLog(first: 30) { edges { node { action changes { field before after } } } } } }",
        None,
    ),
    (
        "{ organization { departments { edges { node { employees { edges { node { applications { edges { node { "
        "jobPosting { id } } } } } } } } } } } }",
        None,
    ),
]


def cases() -> list[tuple[str, dict[str, Any] | None]]:
    found: list[tuple[str, dict[str, Any] | None]] = []
    for query in documented_operations():
        if "importEmployees" in query:
            found += [(query, {"input": {"rows": [ROW] * rows}}) for rows in (100, 1)]
        elif "moveEmployee" in query:
            found.append((query, MOVE))
        else:
            found.append((query, None))
    return [*found, (Q1, None), (Q2, None), (Q3, None), (fifteen_aliases(), None), *EXTRA]


@pytest.fixture(scope="module")
def computed(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What the docs' function says of each case, run by Node."""
    assert NODE is not None, "node is needed for the query cost function's test; install Node.js"
    work = tmp_path_factory.mktemp("query-cost-js")
    (work / "node_modules").symlink_to(apollo_client_modules(), target_is_directory=True)
    shutil.copy(HERE / "cost.mjs", work / "cost.mjs")
    (work / "query-cost.mjs").write_text(code_blocks(QUERY_COST, "js")[0])
    (work / "cases.json").write_text(json.dumps([{"query": q, "variables": v} for q, v in cases()]))
    result = subprocess.run(
        [NODE, "cost.mjs", str(ROOT / "schema.graphql"), "cases.json"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    output: list[dict[str, Any]] = json.loads(result.stdout)
    return output


def server_cost(http: httpx.Client, token: str, query: str, variables: dict[str, Any] | None) -> int:
    """The server's ``queryCost`` of the request. An employee's token: the mutations are
    refused (FORBIDDEN) after their cost is counted, so nothing is written."""
    response = http.post(
        "/graphql", json={"query": query, "variables": variables or {}}, headers={"Authorization": f"Bearer {token}"}
    )
    cost: int = response.json()["extensions"]["cost"]["queryCost"]
    return cost


@pytest.mark.parametrize("index", range(len(cases())))
def test_query_cost_js__the_servers_figure__as_written_and_as_apollo_sends_it(
    computed: list[dict[str, Any]], api: Api, tenant: Tenant, index: int
) -> None:
    query, variables = cases()[index]
    token = api.token(tenant.employee())
    figures = computed[index]
    assert "__typename" in figures["apolloQuery"]
    expected = server_cost(api.http, token, query, variables)
    assert figures["cost"] == expected, query
    assert figures["apolloCost"] == server_cost(api.http, token, figures["apolloQuery"], variables) == expected
