"""`python -m bench.plans`: server CPU per request with and without compiled plans.

The bench dataset on a fresh in-memory DynamoDB Local; the app in this process, driven
through httpx's ASGI transport (no sockets), so ``time.process_time`` around N requests is
the server's CPU (DynamoDB Local runs in its own process). Each request is answered by
both apps once first, and the answers compared: the figures are of identical results.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import httpx

from bench.__main__ import SECRET
from bench.dataset import build
from bench.queries import Q1, Q2, Q3, q4
from bench.serve import RAISED_LIMITS
from datastore import ids
from datastore.client import make_client
from datastore.dev.local import DynamoDBLocal
from datastore.provision import ensure_table
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.settings import Settings
from graphql_api.settings.api import ApiSettings

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
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        table_name = f"hr-bench-{ids.new_id().lower()}"
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=table_name)
        client = make_client(settings)
        ensure_table(client, table_name)
        data = build(client, table_name)
        api = ApiSettings.from_env(
            {
                "HR_ENV": "bench",
                "ALLOWED_HOSTS": "bench",  # the in-process client's base URL
                "JWT_SECRET": SECRET,
                "COST_IN_RESPONSE": "false",
                # The bench server's limits, so Q4's 100 aliases run.
                **RAISED_LIMITS,
                "TENANT_COST_PER_SECOND": "0",
            }
        )
        admin = issue_token(api, subject=data.admin.emp_id, org_id=data.org_id, role="admin")
        profile = issue_token(api, subject=data.profile.emp_id, org_id=data.org_id, role="employee")
        datastore = Datastore(client, table_name)
        general = create_app(datastore, replace(api, compiled_plans=False))
        planned = create_app(datastore, replace(api, compiled_plans=True))
        print(f"{'query':6} {'graphql-core CPU ms':>20} {'plan CPU ms':>12} {'ratio':>6}")
        for name, token, query in (("Q1", admin, Q1), ("Q2", admin, Q2), ("Q3", profile, Q3), ("Q4", admin, q4(data))):
            general_ms, general_body = asyncio.run(cpu_ms(general, token, query))
            planned_ms, planned_body = asyncio.run(cpu_ms(planned, token, query))
            assert planned_body == general_body, name
            assert "errors" not in planned_body, planned_body["errors"]
            print(f"{name:6} {general_ms:20.1f} {planned_ms:12.1f} {planned_ms / general_ms:6.2f}")


if __name__ == "__main__":
    main()
