"""`python -m bench.subscriptions [SUBSCRIBERS] [EVENTS]`: live updates' fan-out on one host.

A bench server (bench.serve: the product app, its change feed on, in a process of its own,
FEED_POLL_SECONDS at its default) on a fresh in-memory DynamoDB Local. SUBSCRIBERS (200)
WebSocket clients of one organisation (graphql-transport-ws, the `websockets` library, in
this process) subscribe to ``employeeChanged``; then EVENTS (20) employees are updated one at
a time, each the next once every subscriber has the last. Printed: subscribers, events,
deliveries, the delivery latency from the mutation's answer (the GraphQL ``updateEmployee``
over HTTP) to each client's ``next`` (p50, p95, max), and the server's CPU per event
(its process's CPU time over the events, per event: delivered to every subscriber). Figures,
never assertions; nothing here runs in the tests.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import replace

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench.dataset import on_loop, provisioned
from bench.figures import pct
from bench.serving import API, Server, cpu_seconds, server_env
from datastore.dev.local import DynamoDBLocal
from datastore.kinds.entities import Employee, Organization, Plan
from datastore.table.store import Datastore
from datastore.tenants import organizations
from datastore.values.ids import new_id
from graphql_api.auth.tokens import issue_token
from graphql_api.execution import ids
from graphql_api.settings import Settings

SUBSCRIPTION = "subscription { employeeChanged { cursor employee { id lastName } } }"
UPDATE = """mutation Rename($input: UpdateEmployeeInput!) {
  updateEmployee(input: $input) { employee { lastName version } }
}"""


async def subscriber(url: str, token: str) -> ClientConnection:
    ws = await connect(url, subprotocols=["graphql-transport-ws"])  # type: ignore[list-item]
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
    ack = json.loads(await ws.recv())
    assert ack["type"] == "connection_ack", ack
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
    return ws


async def next_event(ws: ClientConnection) -> float:
    """When this client's next event arrived (pings answered meanwhile)."""
    while True:
        message = json.loads(await ws.recv())
        if message["type"] == "ping":
            await ws.send(json.dumps({"type": "pong"}))
            continue
        assert message["type"] == "next", message
        return time.monotonic()


async def drain(ws: ClientConnection) -> None:
    while True:
        try:
            await asyncio.wait_for(ws.recv(), 0.01)
        except TimeoutError:
            return


async def run(server: Server, token: str, employee: Employee, subscribers: int, events: int) -> None:
    url = server.url.replace("http://", "ws://") + "/graphql"
    sockets = list(await asyncio.gather(*(subscriber(url, token) for _ in range(subscribers))))
    http = httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    global_id = ids.encode("Employee", employee.emp_id)
    version = [employee.version]

    async def update(n: int) -> float:
        variables = {"input": {"id": global_id, "lastName": f"Bench {n}", "expectedVersion": version[0]}}
        answer = (await http.post("/graphql", json={"query": UPDATE, "variables": variables})).json()
        assert "errors" not in answer, answer
        version[0] = answer["data"]["updateEmployee"]["employee"]["version"]
        return time.monotonic()

    # Until one write reaches every subscriber, the subscriptions may not all be registered yet.
    for attempt in range(50):
        waiting = [asyncio.ensure_future(next_event(ws)) for ws in sockets]
        await update(-1 - attempt)
        _done, pending = await asyncio.wait(waiting, timeout=5)
        for task in pending:
            task.cancel()
        await asyncio.sleep(1)
        await asyncio.gather(*(drain(ws) for ws in sockets))  # late events of a partial round
        if not pending:
            break
    else:
        raise RuntimeError("the subscribers never all received one event")

    latencies: list[float] = []
    cpu_before = cpu_seconds(server.process.pid)
    for n in range(events):
        waiting = [asyncio.ensure_future(next_event(ws)) for ws in sockets]
        answered = await update(n)
        arrived = await asyncio.gather(*waiting)
        latencies += [at - answered for at in arrived]
    cpu = cpu_seconds(server.process.pid) - cpu_before
    await http.aclose()
    for ws in sockets:
        await ws.close()
    print(f"subscribers {subscribers}, events {events}, deliveries {len(latencies)}")
    print(
        f"delivery latency from the mutation's answer to the client's next: p50 {pct(latencies, 0.5)} ms, "
        f"p95 {pct(latencies, 0.95)} ms, max {round(max(latencies) * 1000, 1)} ms"
    )
    print(
        f"server CPU per event (delivered to all {subscribers}): {1000 * cpu / events:.1f} ms, "
        f"{1_000_000 * cpu / events / subscribers:.0f} us per delivery"
    )


def main() -> None:
    subscribers = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    events = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        table_name = f"hr-bench-{new_id().lower()}"
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=table_name)

        async def seed(datastore: Datastore) -> tuple[Organization, Employee]:
            return await organizations.create_organization(
                await provisioned(datastore),
                name="Live Bench",
                plan=Plan.PRO,
                email_domains=["live-bench.example"],
                admin_email="admin@live-bench.example",
                admin_first_name="Ada",
                admin_last_name="Admin",
            )

        org, admin = on_loop(settings, seed)
        token = issue_token(API, subject=admin.emp_id, org_id=org.org_id, role="admin")
        env = server_env(
            local.endpoint_url,
            table_name,
            SUBSCRIPTION_CONNECTIONS_PER_TENANT=str(subscribers + 10),
            TENANT_COST_PER_SECOND="0",
        )
        server = Server(env, quiet=True)
        try:
            asyncio.run(run(server, token, admin, subscribers, events))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
