"""EXPLAIN over HTTP: ``extensions.plan`` of the directory query (the bench's Q1) per field path,
agreeing with ``extensions.cost``; only for those who may ask; another tenant's keys never shown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.queries import Q1
from datastore.aws.calls import Call, CallLog
from graphql_api.app import create_app
from graphql_api.execution.explain import ExplainLog, plan_of
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.fixtures import Api, Demo, GraphQLClient
from tests.graphql_api.live import serving, with_settings

EXPLAIN = {"explain": True}


def explained(client: GraphQLClient, query: str, **extensions: Any) -> dict[str, Any]:
    body: dict[str, Any] = client.post(query, extensions={**EXPLAIN, **extensions}).json()
    assert "errors" not in body, body["errors"]
    return body


@pytest.fixture(scope="module", params=[True, False], ids=["plans", "graphql-core"])
def served(
    request: pytest.FixtureRequest, new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> Iterator[Api]:
    settings = with_settings(api_settings, compiled_plans=request.param)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield Api(http, settings)


def test_explain__directory_query__plan_per_field_path_agrees_with_cost(served: Api, demo: Demo) -> None:
    alice = demo.person("alice@acme.co")
    body = explained(served.as_(alice), Q1)
    plan, cost = body["extensions"]["plan"], body["extensions"]["cost"]
    assert (plan["waves"], plan["requestCount"], plan["readCapacityUnits"], plan["itemsRead"]) == (
        cost["waves"],
        cost["requestCount"],
        cost["readCapacityUnits"],
        cost["itemsRead"],
    )
    paths = {entry["path"]: entry for entry in plan["fields"]}
    employees = paths["organization.departments.edges.node.employees"]
    departments = paths["organization.departments"]
    assert employees["loaders"] == ["ListLoader"] and departments["loaders"] == ["ListLoader"]
    # The departments' page, then every department's employees in one wave after it.
    assert len(departments["waves"]) == 1 and employees["waves"] == [departments["waves"][0] + 1]
    by_number = {call["call"]: call for call in plan["calls"]}
    employee_calls = [by_number[number] for number in employees["calls"]]
    assert {call["operation"] for call in employee_calls} == {"Query"}
    assert all(key.startswith(f"ORG#{alice.org_id}") for call in employee_calls for key in call["keys"])
    assert sum(call["itemsRead"] for call in plan["calls"]) == cost["itemsRead"]
    assert round(sum(call["readCapacityUnits"] for call in plan["calls"]), 2) == cost["readCapacityUnits"]
    assert all(call["ms"] is not None and call["wave"] >= 1 for call in plan["calls"])
    # The same query unexplained: the same waves and calls.
    plain = served.as_(alice).post(Q1).json()["extensions"]
    assert "plan" not in plain
    assert (plain["cost"]["waves"], plain["cost"]["requests"]) == (cost["waves"], cost["requests"])


def test_explain__employee_or_manager__no_plan(served: Api, demo: Demo) -> None:
    for email in ("dave@acme.co", "bob@acme.co"):
        body = served.as_(demo.person(email)).post("{ me { email } }", extensions=EXPLAIN).json()
        assert body["data"]["me"]["email"] == email
        assert "plan" not in body["extensions"]


def test_explain__platform_operator__plan_without_any_tenant_key(served: Api, demo: Demo) -> None:
    body = explained(served.platform, "{ organizations(first: 2) { edges { node { name } } } }")
    keys = [key for call in body["extensions"]["plan"]["calls"] for key in call["keys"]]
    assert keys, body["extensions"]["plan"]
    assert not [key for key in keys if any(org in key for org in (demo.person("alice@acme.co").org_id,))]
    assert all("…" in key or "#" not in key for key in keys)


def test_plan_of__keys_of_another_organisation__only_their_shape() -> None:
    log = CallLog()
    own, other = "01M8HZ23S6RG6SSHB91HR0AR96", "01M8HZ23S6RG6SSHB91HR0AR99"
    for org in (own, other):
        call = Call("GetItem", {"Key": {"PK": {"S": f"ORG#{org}"}, "SK": {"S": f"EMP#{org}"}}}, 1.0, 2.0)
        log.add(call)
    log.add(Call("GetItem", {"Key": {"PK": {"S": "EMAIL#a@b.example"}, "SK": {"S": "#IDENTITY"}}}, 2.0, 3.0))
    keys = [call["keys"] for call in plan_of(log, ExplainLog(), own)["calls"]]
    assert keys == [[f"ORG#{own} | EMP#{own}"], ["ORG#… | EMP#…"], ["EMAIL#… | #IDENTITY"]]
    assert plan_of(log, ExplainLog(), None)["calls"][0]["keys"] == ["ORG#… | EMP#…"]
