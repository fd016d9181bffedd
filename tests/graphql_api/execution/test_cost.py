"""extensions.cost: exact DynamoDB requests, waves, capacity and items for known queries."""

from __future__ import annotations

from typing import Any, Final

import pytest

from graphql_api.app import create_app
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.live import serving, with_settings

# The query's cost, the limit, the charge and the bucket (tests/graphql_api/limits/test_tenant_rate.py).
SCORE: Final = ("queryCost", "maxQueryCost", "charge", "bucket")


def cost_of(body: dict[str, Any]) -> dict[str, Any]:
    """``extensions.cost``'s DynamoDB figures."""
    assert "errors" not in body, body["errors"]
    cost: dict[str, Any] = body["extensions"]["cost"]
    assert cost["serverTimeMs"] > 0
    return {name: value for name, value in cost.items() if name != "serverTimeMs" and name not in SCORE}


# Every tenant request first checks that its organisation and caller are active
# (graphql_api/auth/active.py): the organisation's and the caller's items in one BatchGetItem, in
# the same batch as the query's own first reads by id. Both stay in the request's loader, so
# `me` and `organization` cost nothing more.


def test_cost__me__the_caller_check_only(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query("{ me { email } }")
    assert cost_of(body) == {
        "requests": {"BatchGetItem": 1},
        "requestCount": 1,
        "waves": 1,
        "readCapacityUnits": 1.0,
        "writeCapacityUnits": 0.0,
        "itemsRead": 2,
    }


def test_cost__department_list__organization_then_departments(api: Api, tenant: Tenant) -> None:
    for name in ("Engineering", "Sales", "Finance"):
        tenant.department(name)
    body = api.admin_of(tenant).query("{ organization { departments { edges { node { name } } } } }")
    # One round: the caller check (one BatchGetItem) alongside AP5, which needs only the org id.
    assert cost_of(body) == {
        "requests": {"BatchGetItem": 1, "Query": 1},
        "requestCount": 2,
        "waves": 1,
        "readCapacityUnits": 1.5,
        "writeCapacityUnits": 0.0,
        "itemsRead": 2 + 3,
    }


def test_cost__nested__one_wave_per_level(api: Api, tenant: Tenant) -> None:
    engineering, sales = tenant.department("Engineering"), tenant.department("Sales")
    for department in (engineering, engineering, sales, sales):
        tenant.employee(department)
    body = api.admin_of(tenant).query(
        "{ organization { departments { edges { node { employees { edges { node { email "
        "department { name } } } } } } } } }"
    )
    # caller check + departments Query | 2 membership Queries | 1 BatchGetItem of 2 departments
    assert cost_of(body) == {
        "requests": {"BatchGetItem": 2, "Query": 3},
        "requestCount": 5,
        "waves": 3,
        "readCapacityUnits": 1.0 + 0.5 + 2 * 0.5 + 2 * 0.5,
        "writeCapacityUnits": 0.0,
        "itemsRead": 2 + 2 + 4 + 2,
    }


def test_cost__the_query_cost_and_the_limit__beside_the_calls(api: Api, tenant: Tenant) -> None:
    cost = api.admin_of(tenant).query("{ me { email } }")["extensions"]["cost"]
    assert (cost["queryCost"], cost["maxQueryCost"], cost["charge"]) == (2, 5000, 2)  # 1 + 1/4, rounded up
    assert set(cost["bucket"]) == {"remaining", "capacity", "refillPerSecond"}


def test_cost__refused_by_the_cost_limit__the_cost_shown(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(
        "{ organization { departments(first: 100) { edges { node { "
        "employees(first: 100) { edges { node { email } } } } } } } }"
    )
    assert body["errors"][0]["extensions"]["limit"] == "cost"
    cost = body["extensions"]["cost"]
    assert (cost["queryCost"], cost["maxQueryCost"]) == (body["errors"][0]["extensions"]["cost"], 5000)
    assert "charge" not in cost and "bucket" not in cost  # refused before the charge
    assert cost["requestCount"] == 0


def test_cost__not_a_valid_document__the_limit_alone(api: Api, tenant: Tenant) -> None:
    cost = api.admin_of(tenant).query("{ me { salary } }")["extensions"]["cost"]
    assert {name: cost[name] for name in SCORE if name in cost} == {"maxQueryCost": 5000}


def test_cost__anonymous_typename__no_calls(anonymous: GraphQLClient) -> None:
    body = anonymous.query("{ __typename }")
    assert body["extensions"]["cost"]["queryCost"] == 0  # __typename costs nothing, and no bucket
    assert "bucket" not in body["extensions"]["cost"]
    assert cost_of(body) == {
        "requests": {},
        "requestCount": 0,
        "waves": 0,
        "readCapacityUnits": 0.0,
        "writeCapacityUnits": 0.0,
        "itemsRead": 0,
    }


@pytest.mark.parametrize("enabled", [True, False])
def test_cost__switched_by_configuration(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, api: Api, tenant: Tenant, enabled: bool
) -> None:
    settings = with_settings(api_settings, cost_in_response=enabled)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        response = http.post(
            "/graphql",
            json={"query": "{ me { email } }"},
            headers={"Authorization": f"Bearer {api.token(tenant.admin)}"},
        )
    body = response.json()
    assert body["data"] == {"me": {"email": tenant.admin.email}}
    assert ("cost" in body.get("extensions", {})) is enabled


def test_settings__cost_in_response__from_environment() -> None:
    base = {"HR_ENV": "test", "JWT_SECRET": "x" * 40}
    assert ApiSettings.from_env(base).cost_in_response is True
    assert ApiSettings.from_env({**base, "COST_IN_RESPONSE": "false"}).cost_in_response is False
