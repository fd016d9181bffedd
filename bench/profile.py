"""`python -m bench.profile [Q1 Q2 ...] [-n N] [--pyinstrument]`: a query's CPU cost in-process.

The bench's timings are wall-clock on a shared machine; this measures what one request costs
the API process itself: the product app is served in this process (httpx's ASGI transport,
the whole middleware stack, boto3 on its I/O pool), and CPU time is read with
``time.process_time`` (every thread of the process; DynamoDB Local runs in its own). The
figure is the median of N requests after two warm-ups. With ``--pyinstrument`` the same
requests run under pyinstrument and its call tree is printed: where the time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import replace
from typing import Any

import httpx
import orjson

from bench import queries as q
from bench.dataset import Dataset, build
from bench.serve import RAISED_LIMITS
from datastore import keys
from datastore.client import make_client
from datastore.config import DatastoreSettings
from datastore.local import DynamoDBLocal
from datastore.provision import ensure_table
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth import issue_token
from graphql_api.config import ApiSettings

SECRET = "bench-secret-0123456789-0123456789-abcdef"


async def post(app: Any, token: str, body: dict[str, Any]) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        response = await client.post("/graphql", json=body, headers={"Authorization": f"Bearer {token}"})
        answer: dict[str, Any] = response.json()
        return answer


async def run(app: Any, token: str, body: dict[str, Any], n: int, profile: bool) -> tuple[list[float], list[float]]:
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
    content = orjson.dumps(body)
    cpu: list[float] = []
    wall: list[float] = []
    async with httpx.AsyncClient(transport=transport, base_url="http://bench", headers=headers, timeout=120) as client:
        for _ in range(2):
            answer = orjson.loads((await client.post("/graphql", content=content)).content)
            if answer.get("errors"):
                raise RuntimeError(f"the query failed: {answer['errors'][0]['message']}")
        profiler = None
        if profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005, async_mode="enabled")
            profiler.start()
        for _ in range(n):
            c, w = time.process_time(), time.perf_counter()
            (await client.post("/graphql", content=content)).raise_for_status()
            cpu.append((time.process_time() - c) * 1000)
            wall.append((time.perf_counter() - w) * 1000)
        if profiler is not None:
            profiler.stop()
            print(profiler.output_text(unicode=True, color=False, show_all=False, time="percent_of_total"))
    return cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("names", nargs="*", default=["Q1", "Q2"])
    parser.add_argument("-n", type=int, default=20)
    parser.add_argument("--pyinstrument", action="store_true")
    args = parser.parse_args()
    base = DatastoreSettings.from_env()
    with DynamoDBLocal(base.local_cache_dir) as local:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-bench-{keys.new_id().lower()}")
        client = make_client(settings)
        ensure_table(client, settings.table_name)
        data: Dataset = build(client, settings.table_name)
        api = ApiSettings.from_env({**os.environ, **RAISED_LIMITS, "HR_ENV": "bench", "JWT_SECRET": SECRET})
        app = create_app(Datastore(client, settings.table_name), api)
        tokens = {
            "admin": issue_token(api, subject=data.admin.emp_id, org_id=data.org_id, role="admin"),
            "profile": issue_token(api, subject=data.profile.emp_id, org_id=data.org_id, role="employee"),
        }
        known = {
            "Q1": ("admin", {"query": q.Q1}),
            "Q2": ("admin", {"query": q.Q2}),
            "Q3": ("profile", {"query": q.Q3}),
            "Q4": ("admin", {"query": q.q4(data)}),
            "Q7": ("admin", {"query": q.Q7}),
        }
        if "Q6" in args.names:
            afters = q.q6_cursors(lambda body: asyncio.run(post(app, tokens["admin"], body)))
            known["Q6"] = ("admin", {"query": q.q6(afters)})
        for name in args.names:
            caller, body = known[name]
            cpu, wall = asyncio.run(run(app, tokens[caller], body, args.n, args.pyinstrument))
            print(
                f"{name}: CPU ms median {statistics.median(cpu):.1f} (min {min(cpu):.1f}), "
                f"wall ms median {statistics.median(wall):.1f}, n={args.n}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
