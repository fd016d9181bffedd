"""What an event's delivery cost, in its ``extensions.cost`` (COST_IN_RESPONSE, on by default).

Each delivery reads through loaders (the caller's active check, the item the event names), so
its cost names DynamoDB calls. A live event is read by its round's loaders, shared by the
organisation's subscribers on the process (graphql_api/subscriptions/session.py): each
subscriber's cost is the round's calls, the reads its payload was built from. A replayed
event (``after``) is read by the subscription's own loaders, and its cost is those calls.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette

from datastore.tenants import departments
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import subscribed
from tests.graphql_api.subscriptions.ws import AUDIT, Socket, admin_socket


def delivered(socket: Socket, operation_id: str) -> dict[str, Any]:
    message = socket.next_of(operation_id)
    assert message["type"] == "next", message
    payload: dict[str, Any] = message["payload"]
    return payload


def test_live_event__its_cost_counts_the_round_s_reads__for_each_subscriber(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    sockets = [admin_socket(live_url, api, tenant) for _ in range(2)]
    try:
        for socket in sockets:
            socket.subscribe("a", AUDIT)
        subscribed(live_app, tenant.org_id, count=2)
        department = run(departments.create_department(tenant.table, name="Costed"))
        payloads = [delivered(socket, "a") for socket in sockets]
    finally:
        for socket in sockets:
            socket.close()
    for payload in payloads:
        assert payload["data"]["auditEventAdded"]["event"]["entityId"] == department.dept_id
        cost = payload["extensions"]["cost"]
        # The caller check (organisation and employee) in one batch, read once for both subscribers.
        assert cost["requests"] == {"BatchGetItem": 1}, cost
        assert cost["requestCount"] == 1 and cost["readCapacityUnits"] > 0 and cost["itemsRead"] >= 2


def test_replayed_event__its_cost_counts_its_own_reads(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    socket = admin_socket(live_url, api, tenant)
    socket.subscribe("a", AUDIT)
    subscribed(live_app, tenant.org_id)
    first = run(departments.create_department(tenant.table, name="Before"))
    cursor = delivered(socket, "a")["data"]["auditEventAdded"]["cursor"]
    socket.close()
    missed = run(departments.create_department(tenant.table, name="Missed"))

    resumed = admin_socket(live_url, api, tenant)
    try:
        resumed.subscribe("a", AUDIT, {"after": cursor})
        payload = delivered(resumed, "a")
    finally:
        resumed.close()
    assert payload["data"]["auditEventAdded"]["event"]["entityId"] == missed.dept_id != first.dept_id
    cost = payload["extensions"]["cost"]
    assert cost["requestCount"] >= 1 and cost["readCapacityUnits"] > 0, cost
    assert set(cost["requests"]) <= {"BatchGetItem", "GetItem", "Query"}, cost


def test_explained_subscription__each_delivery_carries_the_plan_of_its_own_calls(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    socket = admin_socket(live_url, api, tenant)
    try:
        socket.send({"id": "a", "type": "subscribe", "payload": {"query": AUDIT, "extensions": {"explain": True}}})
        subscribed(live_app, tenant.org_id)
        run(departments.create_department(tenant.table, name="Explained"))
        payload = delivered(socket, "a")
    finally:
        socket.close()
    plan, cost = payload["extensions"]["plan"], payload["extensions"]["cost"]
    assert (plan["waves"], plan["requestCount"], plan["readCapacityUnits"]) == (
        cost["waves"],
        cost["requestCount"],
        cost["readCapacityUnits"],
    )
    [call] = plan["calls"]
    assert call["operation"] == "BatchGetItem" and call["wave"] == 1 and call["itemsRead"] >= 2
    assert all(key.startswith(f"ORG#{tenant.org_id}") for key in call["keys"])
