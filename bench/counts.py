"""`python -m bench.counts`: the bench queries' DynamoDB requests and waves, on both executors.

The bench dataset on a fresh in-memory DynamoDB Local; the app in this process (httpx's ASGI
transport), once with compiled plans and once on graphql-core alone. Each query's figures
come from its response's ``extensions.cost``, as `make bench` reads them: what a change to the
request path or the executor must leave as it is. Nothing is timed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx

from bench.in_process import in_process, run
from bench.queries import Q1, Q2, Q3, Q7, q4
from datastore.table.store import Datastore
from graphql_api.app import create_app


async def cost_of(app: Any, token: str, query: str) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=120) as http:
        body = (await http.post("/graphql", json={"query": query}, headers={"Authorization": f"Bearer {token}"})).json()
    assert "errors" not in body, body["errors"]
    cost: dict[str, Any] = body["extensions"]["cost"]
    return cost


def main() -> None:
    with in_process(cost_in_response=True) as world:
        datastore = Datastore.connect(world.settings)  # instrumented, as the bench's servers' (bench.serve)
        api, admin, profile, data = world.api, world.admin, world.profile, world.data
        apps = {
            "plans": create_app(datastore, replace(api, compiled_plans=True)),
            "graphql-core": create_app(datastore, replace(api, compiled_plans=False)),
        }
        queries = (
            ("Q1", admin, Q1),
            ("Q2", admin, Q2),
            ("Q3", profile, Q3),
            ("Q4", admin, q4(data)),
            ("Q7", admin, Q7),
        )
        print(f"{'query':6} {'executor':14} {'requests':>9} {'waves':>6}  by operation")
        for name, token, query in queries:
            for executor, app in apps.items():
                cost = run(datastore, cost_of(app, token, query))
                print(f"{name:6} {executor:14} {cost['requestCount']:9} {cost['waves']:6}  {cost['requests']}")


if __name__ == "__main__":
    main()
