"""`python -m bench.wake [-n N] [--gap-ms MS] [--rounds R]`: what waking from idle costs a request.

At concurrency 1 the bench's product server idles between its requests while the floor and
the naive variant take their turns (``concurrency_1`` in bench/__main__.py). This measures
what that idling alone costs: a product server (bench.serve) on a fresh in-memory DynamoDB
Local with the bench's data, warmed up as the bench warms it, answers Q1, Q3 and Q4 N times
back to back, then N times with a sleep of MS between requests (nothing else running), in
turn R times. For each it prints the p50 and the server process's CPU per request (user plus
system, from /proc). On this machine a request after an idle gap costs more CPU and takes
longer than the same request back to back. Why is not pinned down: the server's own timers
are too little to account for it (``python -m bench.idle``), and two ``nice -n 19`` spinning
processes keeping the virtual CPUs busy took it away in one run and not in the next, so the
CPUs' idle states and caches left cold by whatever ran in the gap are both candidates.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import httpx
import orjson

from bench.__main__ import API, Server, cpu_seconds, pct, server_env
from bench.dataset import on_fresh_table
from bench.floor import Floor
from bench.queries import Q1, Q3, q4
from bench.warmup import warm_up
from datastore.client import make_client
from datastore.dev.local import DynamoDBLocal
from graphql_api.auth.tokens import issue_token
from graphql_api.settings import Settings


def measure(server: Server, http: httpx.Client, body: bytes, n: int, gap: float) -> tuple[float, float]:
    """p50 in ms and the server's CPU ms per request, for ``n`` requests ``gap`` seconds apart."""
    latencies: list[float] = []
    cpu0 = cpu_seconds(server.process.pid)
    for _ in range(n):
        started = time.perf_counter()
        http.post("/graphql", content=body).raise_for_status()
        latencies.append(time.perf_counter() - started)
        if gap:
            time.sleep(gap)
    return pct(latencies, 0.5), round((cpu_seconds(server.process.pid) - cpu0) * 1000 / n, 2)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.wake")
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=40.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        bench = on_fresh_table(base, local.endpoint_url)
        table, data = bench.settings.table_name, bench.data
        floor = Floor(make_client(bench.settings, stock=True), table, data)
        print(warm_up(local.pid, [floor.q1, floor.q2, floor.q3, floor.q4]), flush=True)
        admin = issue_token(API, subject=data.admin.emp_id, org_id=data.org_id, role="admin")
        profile = issue_token(API, subject=data.profile.emp_id, org_id=data.org_id, role="employee")
        server = Server(server_env(local.endpoint_url, table), quiet=True)
        queries: list[tuple[str, str, dict[str, Any]]] = [
            ("Q1", admin, {"query": Q1}),
            ("Q3", profile, {"query": Q3}),
            ("Q4", admin, {"query": q4(data)}),
        ]
        print(f"p50 ms / server CPU ms per request, {args.n} requests back to back and {args.gap_ms:g} ms apart")
        try:
            for name, token, query in queries:
                body = orjson.dumps(query)
                headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
                with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
                    measure(server, http, body, 20, 0.0)  # the path warmed
                    for round_ in range(1, args.rounds + 1):
                        close = measure(server, http, body, args.n, 0.0)
                        apart = measure(server, http, body, args.n, args.gap_ms / 1000)
                        print(
                            f"{name} round {round_}: back to back {close[0]} / {close[1]}, "
                            f"{args.gap_ms:g} ms apart {apart[0]} / {apart[1]}",
                            flush=True,
                        )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
