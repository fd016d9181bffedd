"""`python -m bench.counts`: the bench queries' DynamoDB requests and waves, on both executors.

The bench dataset on a fresh in-memory DynamoDB Local; the app in this process (httpx's ASGI
transport), once with compiled plans and once on graphql-core alone. Each query's figures
come from its response's ``extensions.cost``, as `make bench` reads them: what a change to the
request path or the executor must leave as it is. Nothing is timed.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import httpx

from bench.__main__ import SECRET
from bench.dataset import build
from bench.queries import Q1, Q2, Q3, Q7, q4
from bench.serve import RAISED_LIMITS
from datastore import keys
from datastore.client import make_client
from datastore.dev.local import DynamoDBLocal
from datastore.provision import ensure_table
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.settings import Settings
from graphql_api.settings.api import ApiSettings


async def cost_of(app: Any, token: str, query: str) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=120) as http:
        body = (await http.post("/graphql", json={"query": query}, headers={"Authorization": f"Bearer {token}"})).json()
    assert "errors" not in body, body["errors"]
    cost: dict[str, Any] = body["extensions"]["cost"]
    return cost


def main() -> None:
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        table_name = f"hr-bench-{keys.new_id().lower()}"
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=table_name)
        client = make_client(settings)
        ensure_table(client, table_name)
        data = build(client, table_name)
        api = ApiSettings.from_env(
            {
                "HR_ENV": "bench",
                "ALLOWED_HOSTS": "bench",  # the in-process client's base URL
                "JWT_SECRET": SECRET,
                "COST_IN_RESPONSE": "true",
                **RAISED_LIMITS,
                "TENANT_COST_PER_SECOND": "0",
            }
        )
        admin = issue_token(api, subject=data.admin.emp_id, org_id=data.org_id, role="admin")
        profile = issue_token(api, subject=data.profile.emp_id, org_id=data.org_id, role="employee")
        datastore = Datastore.connect(settings)  # instrumented, as the bench's servers' (bench.serve)
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
                cost = asyncio.run(cost_of(app, token, query))
                print(f"{name:6} {executor:14} {cost['requestCount']:9} {cost['waves']:6}  {cost['requests']}")


if __name__ == "__main__":
    main()
