"""`python -m bench.move_profile [-n N] [--pyinstrument]`: what one moveEmployee (Q5) costs the
API process in CPU, and where it goes.

bench.profile's measure for the write Q5: the bench's dataset on a fresh DynamoDB Local, the
product app served in this process (httpx's ASGI transport, every middleware) on uvloop, and
each of N moves (each a different employee to another department, as ``make bench`` sends
them) timed with ``time.process_time``; the median and the minimum, after ten warm-ups. With
``--pyinstrument`` N more moves run under pyinstrument and its call tree is printed: how the
CPU splits between the DynamoDB calls, the move's own work and the GraphQL and HTTP layers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from typing import Any

import httpx
import orjson
import uvloop

from bench.dataset import seeded
from bench.queries import q5_moves
from bench.serve import RAISED_LIMITS
from bench.serving import SECRET
from datastore.dev.local import DynamoDBLocal
from datastore.table.store import Datastore
from datastore.values.ids import new_id
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.entrypoints.heap import settle_heap
from graphql_api.settings import Settings

WARM_UPS = 10


async def measure(app: Any, datastore: Datastore, token: str, bodies: list[bytes], n: int, profile: bool) -> None:
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client,
    ):
        for body in bodies[:WARM_UPS]:
            answer = (await client.post("/graphql", content=body, headers=headers)).json()
            if "errors" in answer:
                raise RuntimeError(f"a move failed: {answer['errors']}")
        cpu: list[float] = []
        for body in bodies[WARM_UPS : WARM_UPS + n]:
            started = time.process_time()
            await client.post("/graphql", content=body, headers=headers)
            cpu.append((time.process_time() - started) * 1000)
        print(f"Q5 in-process CPU ms per move: median {statistics.median(cpu):.2f}, min {min(cpu):.2f}, n={n}")
        if profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005, async_mode="disabled")
            profiler.start()
            for body in bodies[WARM_UPS + n : WARM_UPS + 2 * n]:
                await client.post("/graphql", content=body, headers=headers)
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False))
    await datastore.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.move_profile")
    parser.add_argument("-n", type=int, default=300, help="moves measured (at most 1,345)")
    parser.add_argument("--pyinstrument", action="store_true", help="then profile as many moves again")
    args = parser.parse_args()
    # As bench.serve: one tenant flat out, no tenant rate limit.
    overrides = {"TENANT_COST_PER_SECOND": "0", "HR_ENV": "bench", "ALLOWED_HOSTS": "bench", "JWT_SECRET": SECRET}
    loaded = Settings.load({**RAISED_LIMITS, **overrides})
    base = loaded.datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-bench-{new_id().lower()}")
        data = seeded(settings)
        datastore = Datastore(settings)
        app = create_app(datastore, loaded.api)
        settle_heap()  # as the server does
        token = issue_token(loaded.api, subject=data.admin.emp_id, org_id=data.org_id, role="admin")
        bodies = [orjson.dumps(move) for move in q5_moves(data)]
        uvloop.run(measure(app, datastore, token, bodies, args.n, args.pyinstrument))
    return 0


if __name__ == "__main__":
    sys.exit(main())
