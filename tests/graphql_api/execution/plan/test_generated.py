"""Generated documents (hypothesis-graphql) over the demo data: plans answer as graphql-core does.

Deterministic (``derandomize``), a bounded number of examples, each run as an admin, a
manager or an employee. Generated arguments are mostly invalid ids and out-of-range page
sizes, so the answers mix data, BAD_USER_INPUT and FORBIDDEN errors and null propagation.
Data must be equal; errors too, but for which of several failing non-null siblings is
reported, a race in graphql-core itself (differential.without_races). Every example counts:
both servers must answer it (no HTTP 500 is skipped).

And the plans must have run them: the generator writes queries (no mutation), with no
introspection field, no directive but ``@skip``/``@include`` and variables only as literals,
all of which plans cover, so none may fall back to graphql-core, and every one that reaches
execution runs on a plan. Only documents within the server's depth limit are generated: the
server refuses a deeper one (BAD_USER_INPUT, graphql_api/limits/depth.py) before any plan could
run it, and how many of hypothesis-graphql's documents nest past it depends on nothing but the
order of the schema's types (a type added anywhere, the Subscription root's say, took it from
none of the 300 to thirteen). All 300 do on a quiet machine; the threshold leaves room for the
few a loaded one may refuse before execution (a request past its deadline, say), which the
failure message lists with their codes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from graphql import StringValueNode, parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import queries

from datastore.dev import demo as demo_data
from graphql_api.limits.depth import too_deep
from graphql_api.schema.executable import schema_sdl
from graphql_api.settings.api import ApiSettings
from tests.graphql_api.execution.plan.differential import Differential, without_races
from tests.graphql_api.fixtures import Demo

EXAMPLES = 300
ROLES = (demo_data.ACME_ADMIN, demo_data.ACME_MANAGER, "dave@acme.co")
DATE_TIMES = st.sampled_from(["2024-01-01T00:00:00Z", "2021-06-14T09:30:00+00:00", "not a time"]).map(
    lambda text: StringValueNode(value=text)
)
SDL = schema_sdl()
# The suite's servers run with the default (MAX_QUERY_DEPTH unset).
MAX_DEPTH = next(field.default for field in dataclasses.fields(ApiSettings) if field.name == "max_depth")


def within_depth(document: str) -> bool:
    return not any(too_deep(parse(document), MAX_DEPTH))


seen: dict[str, int] = {"examples": 0, "planned": 0, "fallbacks": 0}
# What the planned server answered to the examples that ran on no plan: their error codes.
not_planned: list[list[str]] = []


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    query=queries(SDL, custom_scalars={"DateTime": DATE_TIMES}, allow_x00=False).filter(within_depth),
    role=st.sampled_from(ROLES),
)
def test_generated_queries__any_role__same_answer(both: Differential, demo: Demo, query: Any, role: str) -> None:
    documents = both.documents
    runs, fallbacks = documents.planned_runs, documents.fallbacks
    planned, general = both.compare(demo.person(role), str(query))
    assert without_races(planned) == without_races(general)
    seen["examples"] += 1
    seen["planned"] += documents.planned_runs - runs
    seen["fallbacks"] += documents.fallbacks - fallbacks
    if documents.planned_runs == runs:
        not_planned.append(sorted(str(error.get("extensions", {}).get("code")) for error in planned.get("errors", [])))


def test_generated_queries__nearly_all_ran_on_plans() -> None:
    # Runs after the property (file order).
    assert seen["examples"] >= EXAMPLES * 9 // 10, seen
    assert seen["fallbacks"] == 0, (seen, not_planned)
    assert seen["planned"] >= seen["examples"] * 95 // 100, (seen, not_planned)
