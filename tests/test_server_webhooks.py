"""``server.py run`` delivering webhooks to a real receiver on the loopback (development rules:
http to 127.0.0.1 is allowed, as for an identity provider's issuer), every request verified
with the ``standardwebhooks`` library.

- two organisations, each with its endpoint: each receiver gets its own organisation's
  events only, signed with its own secret, thin (no names);
- the receiver down (its port closed), then up on the same port: the retry schedule runs
  (attempts recorded, PENDING), then every event arrives, exactly once per event id;
- the server SIGKILLed while its receiver holds a delivery in flight, events written while
  no server runs: a new server process delivers every event (at least once each).
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from datastore.aws.client import AsyncDynamo
from datastore.dev.local import free_port
from datastore.kinds.entities import Employee, Plan
from datastore.table.scoped import Table
from datastore.tenancy.scope import TenantScope
from datastore.tenants import departments, organizations
from graphql_api.auth.tokens import issue_token
from graphql_api.settings.api import ApiSettings
from tests import server_process
from tests.blocking import run
from tests.conftest import unique_domain
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.webhooks.receiver import Receiver
from tests.test_live_workers import World, own_organisation

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CREATE = """
mutation Create($input: CreateWebhookEndpointInput!) {
  createWebhookEndpoint(input: $input) { secret webhookEndpoint { id url eventTypes enabled } }
}"""
DELIVERIES = """
query Deliveries { organization { webhookEndpoints { id deliveries(first: 50) { edges { node {
  id eventId eventType status attempts lastStatusCode nextAttemptAt lastError } } } } } }"""
CREATE_DEPARTMENT = (
    "mutation D($input: CreateDepartmentInput!) { createDepartment(input: $input) { department { id } } }"
)


@pytest.fixture
def world(client: DynamoDBClient, dynamo: AsyncDynamo) -> Iterator[World]:
    with own_organisation(client, dynamo, "hr-webhooks", "Hooks Co") as made:
        yield made


def env_for(dynamodb_endpoint: str, table: Table, **extra: str) -> dict[str, str]:
    return {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": table.name,
        "HR_ENV": "development",
        "JWT_SECRET": TEST_SECRET,
        "LOG_FORMAT": "json",
        "METRICS_PORT": "",
        "FEED_POLL_SECONDS": "0.05",
        "FEED_LEASE_SECONDS": "3",
        "WEBHOOK_LEASE_SECONDS": "3",
        "WEBHOOK_SWEEP_SECONDS": "0.5",
        "WEBHOOK_REORDER_SECONDS": "5",
        "WEBHOOK_RETRY_SCHEDULE": "0.5,0.5,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
        **extra,
    }


def graphql(
    server: server_process.ServerProcess, token: str, query: str, variables: dict[str, Any] | None = None
) -> Any:
    response = httpx.post(
        f"{server.url}/graphql",
        json={"query": query, "variables": variables or {}},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    body = response.json()
    assert "errors" not in body, (body, server.output()[-3000:])
    return body["data"]


def token_of(settings: ApiSettings, admin: Employee) -> str:
    return issue_token(settings, subject=admin.emp_id, org_id=admin.org_id, role=admin.role.value)


def register(server: server_process.ServerProcess, token: str, receiver: Receiver) -> str:
    made = graphql(server, token, CREATE, {"input": {"url": receiver.url, "eventTypes": ["department.*"]}})
    secret: str = made["createWebhookEndpoint"]["secret"]
    assert secret.startswith("whsec_")
    receiver.secrets.append(secret)
    return secret


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds} s"
        time.sleep(0.05)


def second_organisation(world: World) -> tuple[Table, Employee]:
    domain = unique_domain()
    org, admin = run(
        organizations.create_organization(
            world.table,
            name="Other Co",
            plan=Plan.PRO,
            email_domains=[domain],
            admin_email=f"admin@{domain}",
            admin_first_name="Bo",
            admin_last_name="Admin",
        )
    )
    return world.table.with_scope(TenantScope(org.org_id, admin.emp_id)), admin


def event_ids(receiver: Receiver) -> Counter[str]:
    return Counter(receiver.ids())


def test_run__two_organisations__each_receiver_gets_its_own_events_signed_and_thin(
    dynamodb_endpoint: str, world: World, api_settings: ApiSettings
) -> None:
    other_table, other_admin = second_organisation(world)
    mine, theirs = Receiver().up(), Receiver().up()
    try:
        with server_process.running(env_for(dynamodb_endpoint, world.table), free_port()) as server:
            token, other_token = token_of(api_settings, world.admin), token_of(api_settings, other_admin)
            register(server, token, mine)
            register(server, other_token, theirs)
            made = [
                graphql(server, token, CREATE_DEPARTMENT, {"input": {"name": f"Secret Name {n}"}}) for n in range(3)
            ]
            for n in range(2):
                graphql(server, other_token, CREATE_DEPARTMENT, {"input": {"name": f"Their Dept {n}"}})
            wait_for(lambda: len(mine.ids()) >= 3 and len(theirs.ids()) >= 2, 30, "both receivers' deliveries")
            time.sleep(1.0)  # anything extra (another tenant's, a duplicate) would arrive meanwhile
            deliveries = graphql(server, token, DELIVERIES)["organization"]["webhookEndpoints"][0]["deliveries"]
    finally:
        mine.down()
        theirs.down()
    assert all(each.verified for each in mine.received + theirs.received)
    assert all(each.body["data"]["organizationId"] == world.admin.org_id for each in mine.received)
    assert all(each.body["data"]["organizationId"] == other_admin.org_id for each in theirs.received)
    assert sorted(each.body["type"] for each in mine.received) == ["department.create"] * 3
    assert len(mine.received) == 3 and len(theirs.received) == 2
    assert not any("Secret Name" in str(each.body) for each in mine.received)  # thin: ids, no values
    nodes = [edge["node"] for edge in deliveries["edges"]]
    assert {node["status"] for node in nodes} == {"DELIVERED"}
    assert {node["lastStatusCode"] for node in nodes} == {200}
    assert {node["eventId"] for node in nodes} == set(mine.ids())
    assert len(made) == 3 and other_table is not None


def test_run__receiver_down_then_up__retried_then_every_event_delivered_once(
    dynamodb_endpoint: str, world: World, api_settings: ApiSettings
) -> None:
    receiver = Receiver().up()
    try:
        with server_process.running(env_for(dynamodb_endpoint, world.table), free_port()) as server:
            token = token_of(api_settings, world.admin)
            register(server, token, receiver)
            receiver.down()
            for n in range(5):
                graphql(server, token, CREATE_DEPARTMENT, {"input": {"name": f"Down {n}"}})

            def retried() -> bool:
                found = graphql(server, token, DELIVERIES)["organization"]["webhookEndpoints"][0]["deliveries"]
                nodes = [edge["node"] for edge in found["edges"]]
                return len(nodes) == 5 and all(node["attempts"] >= 2 and node["status"] == "PENDING" for node in nodes)

            wait_for(retried, 30, "every delivery attempted twice while the receiver is down")
            pending = graphql(server, token, DELIVERIES)["organization"]["webhookEndpoints"][0]["deliveries"]
            node = pending["edges"][0]["node"]
            assert node["lastStatusCode"] is None and "could not be reached" in node["lastError"]
            assert node["nextAttemptAt"] is not None
            receiver.up()
            wait_for(lambda: len(set(receiver.ids())) == 5, 30, "every event delivered after the receiver came back")
            time.sleep(2.0)  # a duplicate would arrive meanwhile
    finally:
        receiver.down()
    counts = event_ids(receiver)
    assert len(counts) == 5 and set(counts.values()) == {1}, counts
    assert all(each.verified for each in receiver.received)


def test_run__killed_mid_delivery_and_writes_while_down__a_new_server_delivers_every_event(
    dynamodb_endpoint: str, world: World, api_settings: ApiSettings
) -> None:
    receiver = Receiver(stall_seconds=5.0).up()
    env = env_for(dynamodb_endpoint, world.table)
    written: list[str] = []
    try:
        server = server_process.start(env, free_port())
        try:
            token = token_of(api_settings, world.admin)
            register(server, token, receiver)
            for n in range(3):
                made = graphql(server, token, CREATE_DEPARTMENT, {"input": {"name": f"Kill {n}"}})
                written.append(made["createDepartment"]["department"]["id"])
            wait_for(lambda: len(receiver.received) >= 1, 30, "a delivery in flight")
        finally:
            server.stop(signal.SIGKILL)  # mid-delivery: the receiver holds the request, unanswered
        receiver.stall_seconds = 0.0
        for n in range(2):  # written while no server runs: only the audit trail knows of them
            run(departments.create_department(world.tenant, name=f"While down {n}"))
        with server_process.running(env, free_port()):
            wait_for(lambda: len(set(receiver.ids())) == 5, 60, "every event delivered by the new server")
    finally:
        receiver.down()
    assert {each.body["type"] for each in receiver.received} == {"department.create"}
    assert len({each.body["data"]["objectId"] for each in receiver.received}) == 5
    assert all(each.verified for each in receiver.received)
