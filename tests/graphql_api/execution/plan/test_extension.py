"""The seam: plans replace only the field walk, so no extension may hook into fields."""

from __future__ import annotations

import gc

from graphql.execution import Executor
from starlette.requests import Request
from strawberry.extensions import SchemaExtension

from datastore.dev.demo import ACME_ADMIN
from datastore.kinds.entities import Application, Department, Employee
from graphql_api.request.context import RequestContext
from graphql_api.request.session import RequestSession
from graphql_api.settings.api import ApiSettings
from tests.graphql_api.execution.app_extensions import app_extensions
from tests.graphql_api.execution.plan.differential import Differential
from tests.graphql_api.fixtures import Demo


def test_our_extensions__no_resolve_hook__plans_bypass_nothing() -> None:
    ours = app_extensions()
    assert ours, "the app's extensions were not found"
    assert [cls.__name__ for cls in ours if cls.resolve is not SchemaExtension.resolve] == []


def test_settings__compiled_plans__on_by_default_and_can_be_turned_off() -> None:
    secret = {"JWT_SECRET": "x" * 32}
    assert ApiSettings.from_env(secret).compiled_plans is True
    assert ApiSettings.from_env({**secret, "COMPILED_PLANS": "false"}).compiled_plans is False


def test_planned_query__ends__its_objects_freed_as_it_ends_not_left_to_the_cyclic_collector(
    both: Differential, demo: Demo
) -> None:
    """A request's context, session, loaders, entities and executor go when it ends.

    graphql-core's executor holds bound methods of itself (its ``async_helpers``): a cycle
    through the request's context to everything the request loaded, which only the cyclic
    collector would free, after a young collection had scanned and promoted all of it. The
    plan's extension breaks it once the plan has run; a library upgrade that makes another
    such cycle fails here.
    """
    query = (
        "{ organization { departments(first: 5) { edges { node { name employees(first: 5) { edges { node { "
        "email department { name } applications(first: 2) { edges { node { status } } } } } } } } } } }"
    )
    headers = {"Authorization": f"Bearer {both.token(demo.person(ACME_ADMIN))}"}
    planned_runs = both.documents.planned_runs
    gc.collect()
    gc.disable()  # only the collection below finds what the requests left
    try:
        for _ in range(3):
            answer = both.planned.post("/graphql", json={"query": query}, headers=headers).json()
            assert "errors" not in answer and answer["data"]["organization"]["departments"]["edges"], answer
        gc.set_debug(gc.DEBUG_SAVEALL)  # what the collection finds stays in gc.garbage, to be read
        gc.collect()
        left = sorted({type(o).__qualname__ for o in gc.garbage if isinstance(o, REQUEST_SCOPED)})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert both.documents.planned_runs == planned_runs + 3  # the plans ran them, not graphql-core
    assert left == []


# Made for one request and for nothing else a test process runs meanwhile (other servers'
# feed readers, leases and timers make none of them).
REQUEST_SCOPED = (RequestContext, RequestSession, Executor, Request, Employee, Department, Application)


def test_fallback_query__the_executor_built_to_pick_a_plan__not_left_to_the_cyclic_collector(
    both: Differential, demo: Demo
) -> None:
    """A query without a plan (introspection here) is run by graphql-core, whose own executor
    keeps its cycle; the one the plan's extension built only to look for a plan does not."""
    headers = {"Authorization": f"Bearer {both.token(demo.person(ACME_ADMIN))}"}
    fallbacks = both.documents.fallbacks
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            answer = both.planned.post(
                "/graphql", json={"query": "{ __schema { queryType { name } } }"}, headers=headers
            ).json()
            assert "errors" not in answer, answer
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        executors = sum(1 for o in gc.garbage if isinstance(o, Executor))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert both.documents.fallbacks == fallbacks + 3
    assert executors <= 3  # graphql-core's own, one a request (6 with the plan's extension's too)
