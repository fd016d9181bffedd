"""extensions.cost: exact DynamoDB requests, waves, capacity and items for known queries."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from datastore.local import free_port
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.config import ApiSettings
from tests.conftest import Tenant
from tests.graphql_api.conftest import Api

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@contextmanager
def serving(app: Starlette) -> Iterator[httpx.Client]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            yield http
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def cost_of(body: dict[str, Any]) -> dict[str, Any]:
    assert "errors" not in body, body["errors"]
    cost: dict[str, Any] = body["extensions"]["cost"]
    assert cost["serverTimeMs"] > 0
    return {name: value for name, value in cost.items() if name != "serverTimeMs"}


def test_cost__me__one_get_item_in_one_wave(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query("{ me { email } }")
    assert cost_of(body) == {
        "requests": {"GetItem": 1},
        "requestCount": 1,
        "waves": 1,
        "readCapacityUnits": 0.5,
        "writeCapacityUnits": 0.0,
        "itemsRead": 1,
    }


def test_cost__department_list__organization_then_departments(api: Api, tenant: Tenant) -> None:
    for name in ("Engineering", "Sales", "Finance"):
        tenant.department(name)
    body = api.admin_of(tenant).query("{ organization { departments { edges { node { name } } } } }")
    # AP13 (organisation + subscription), then AP5: two Queries, one after the other.
    assert cost_of(body) == {
        "requests": {"Query": 2},
        "requestCount": 2,
        "waves": 2,
        "readCapacityUnits": 1.0,
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
    # org Query | departments Query | 2 membership Queries | 1 BatchGetItem of 2 departments
    assert cost_of(body) == {
        "requests": {"BatchGetItem": 1, "Query": 4},
        "requestCount": 5,
        "waves": 4,
        "readCapacityUnits": 4 * 0.5 + 2 * 0.5,
        "writeCapacityUnits": 0.0,
        "itemsRead": 2 + 2 + 4 + 2,
    }


def test_cost__no_calls__zero_cost(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query("{ __typename }")
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
    client: DynamoDBClient, table_name: str, api_settings: ApiSettings, api: Api, tenant: Tenant, enabled: bool
) -> None:
    settings = replace(api_settings, cost_in_response=enabled)
    with serving(create_app(Datastore(client, table_name), settings)) as http:
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
