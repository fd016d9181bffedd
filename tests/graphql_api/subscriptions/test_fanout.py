"""200 subscribers of one organisation on one host all receive one event, once each.

The clients are asyncio WebSockets in the test's own loop (graphql-transport-ws); the server
is the live server of these suites. Timing is bench.subscriptions' job; this counts.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.applications import Starlette
from websockets.asyncio.client import ClientConnection, connect

from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import subscribed

SUBSCRIBERS = 200
DIRECTORY = "subscription { employeeChanged { action employee { email } } }"


async def subscriber(url: str, token: str) -> ClientConnection:
    ws = await connect(url, subprotocols=["graphql-transport-ws"])  # type: ignore[list-item]
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
    assert json.loads(await ws.recv()) == {"type": "connection_ack"}
    await ws.send(json.dumps({"id": "d", "type": "subscribe", "payload": {"query": DIRECTORY}}))
    return ws


async def events_of(ws: ClientConnection, seconds: float) -> list[dict[str, Any]]:
    """Every ``next`` this client gets within ``seconds``."""
    found: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(seconds):
            while True:
                message = json.loads(await ws.recv())
                if message["type"] == "next":
                    found.append(message["payload"]["data"]["employeeChanged"])
    except TimeoutError:
        return found


def test_200_subscribers__all_receive_the_one_event_once(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    url = live_url.replace("http://", "ws://") + "/graphql"
    token = api.token(tenant.admin)

    async def scenario() -> tuple[str, list[list[dict[str, Any]]]]:
        sockets = await asyncio.gather(*(subscriber(url, token) for _ in range(SUBSCRIBERS)))
        try:
            await asyncio.to_thread(subscribed, live_app, tenant.org_id, SUBSCRIBERS, 30)
            hired = await asyncio.to_thread(tenant.employee)
            # Long enough for a loaded machine; every client reads for all of it, so a second
            # delivery of the event would be seen.
            received = await asyncio.gather(*(events_of(ws, 10) for ws in sockets))
            return hired.email, list(received)
        finally:
            await asyncio.gather(*(ws.close() for ws in sockets))

    email, received = asyncio.run(scenario())
    assert len(received) == SUBSCRIBERS
    assert all(len(events) == 1 and events[0]["action"] == "employee.create" for events in received), [
        len(events) for events in received
    ]
    assert {events[0]["employee"]["email"] for events in received} == {email}
