"""`python -m bench.plans`: server CPU per request with and without compiled plans.

The bench dataset on a fresh in-memory DynamoDB Local; the app in this process, driven
through httpx's ASGI transport (no sockets), so ``time.process_time`` around N requests is
the server's CPU (DynamoDB Local runs in its own process). Each request is answered by
both apps once first, and the answers compared: the figures are of identical results.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import httpx

from bench.in_process import in_process, run
from bench.queries import Q1, Q2, Q3, q4
from datastore.table.store import Datastore
from graphql_api.app import create_app

# Requests timed per query and executor.
ROUNDS = 20


async def cpu_ms(app: Any, token: str, query: str) -> tuple[float, dict[str, Any]]:
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
        first = (await http.post("/graphql", json={"query": query}, headers=headers)).json()
        started = time.process_time()
        for _ in range(ROUNDS):
            response = await http.post("/graphql", json={"query": query}, headers=headers)
            assert response.status_code == 200
        return (time.process_time() - started) / ROUNDS * 1000, first


def main() -> None:
    with in_process(cost_in_response=False) as world:
        datastore = Datastore.connect(world.settings)
        api, admin, profile, data = world.api, world.admin, world.profile, world.data
        general = create_app(datastore, replace(api, compiled_plans=False))
        planned = create_app(datastore, replace(api, compiled_plans=True))
        print(f"{'query':6} {'graphql-core CPU ms':>20} {'plan CPU ms':>12} {'ratio':>6}")
        for name, token, query in (("Q1", admin, Q1), ("Q2", admin, Q2), ("Q3", profile, Q3), ("Q4", admin, q4(data))):
            general_ms, general_body = run(datastore, cpu_ms(general, token, query))
            planned_ms, planned_body = run(datastore, cpu_ms(planned, token, query))
            assert planned_body == general_body, name
            assert "errors" not in planned_body, planned_body["errors"]
            print(f"{name:6} {general_ms:20.1f} {planned_ms:12.1f} {planned_ms / general_ms:6.2f}")


if __name__ == "__main__":
    main()
