"""`python -m bench.wake [-n N] [--gap-ms MS] [--rounds R] [--in-process]`: what waking from idle costs a request.

At concurrency 1 the bench's product server idles between its requests while the floor and
the naive variant take their turns (``concurrency_1`` in bench/__main__.py). This measures
what that idling alone costs: a product server (bench.serve) on a fresh in-memory DynamoDB
Local with the bench's data, warmed up as the bench warms it, answers Q1, Q3 and Q4 N times
back to back, then N times with a sleep of MS between requests (nothing else running), in
turn R times. For each it prints the p50 and the server process's CPU per request (user plus
system, from /proc). On this machine a request after an idle gap costs more CPU and takes
longer than the same request back to back.

``--in-process`` narrows it down: the app served in this process (httpx's ASGI transport: no
sockets, no uvicorn), ``{ __typename }`` (no DynamoDB call) and Q3 sent with the event loop's
thread asleep for 0 to 40 ms before each, printing the event loop thread's CPU per request and how
many Python calls one request makes. ``{ __typename }`` makes the same calls at every gap
(Q3's vary a little with how its loads fall into batches) and costs up to two or three times
the CPU after the process slept: the same work runs slower after a sleep of a few ms. It
first prints how this machine's CPUs idle (here the ``haltpoll`` driver with
``guest_halt_poll_ns`` 0: an idle CPU halts at once). That is not the cause: with the CPUs
polling for up to 50 ms before halting (``guest_halt_poll_ns`` and
``guest_halt_poll_grow_start`` 50,000,000, as root, for the session) most of the penalty
stayed (``{ __typename }`` 40 ms apart 1.32-1.38 ms against 1.77-1.86 halting, 0.43-0.47 back
to back), and all of it with the process pinned to one CPU (``taskset -c 0``). What makes the
same code slower after a sleep is not found.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from statistics import median
from types import FrameType
from typing import Any

import httpx
import orjson

from bench.dataset import on_fresh_table
from bench.figures import pct
from bench.floor import Floor, stock_client
from bench.in_process import in_process as bench_in_process
from bench.in_process import run
from bench.queries import Q1, Q3, q4
from bench.serving import API, Server, cpu_seconds, server_env
from bench.warmup import warm_up
from datastore.dev.local import DynamoDBLocal
from datastore.table.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.entrypoints.heap import settle_heap
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


def idle_driver() -> str:
    """How this machine's CPUs idle (Linux's cpuidle), as far as /sys tells."""
    driver = Path("/sys/devices/system/cpu/cpuidle/current_driver")
    poll = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
    if not driver.exists():
        return "cpuidle driver: unknown (no /sys/devices/system/cpu/cpuidle)"
    line = f"cpuidle driver: {driver.read_text().strip()}"
    return line + (f", guest_halt_poll_ns {poll.read_text().strip()}" if poll.exists() else "")


def process_asleep(ms: float) -> None:
    """Block the event loop's thread, as an idle server sits in its poll. In this mode nothing
    else here has work meanwhile (the I/O pool idles, DynamoDB Local has no requests)."""
    time.sleep(ms / 1000)


def python_calls(work: Callable[[], Awaitable[object]]) -> Awaitable[int]:
    """How many Python functions ``work()`` calls on this thread (a profile hook counting them)."""

    async def counted() -> int:
        count = 0

        def hook(_frame: FrameType, event: str, _arg: object) -> None:
            nonlocal count
            count += event == "call"

        sys.setprofile(hook)
        try:
            await work()
        finally:
            sys.setprofile(None)
        return count

    return counted()


def in_process(n: int, gaps_ms: list[float]) -> None:
    """``--in-process``: CPU and Python calls per request, the process asleep ``gaps_ms`` before each."""
    with bench_in_process(cost_in_response=False) as bench:
        datastore = Datastore(bench.settings)
        app = create_app(datastore, bench.api)
        floor = Floor(stock_client(bench.settings), bench.settings.table_name, bench.data)
        print(warm_up(bench.engine_pid, [floor.q1, floor.q2, floor.q3, floor.q4]), flush=True)  # as the bench warms it
        settle_heap()  # as the servers do
        cases = [("{ __typename }", "{ __typename }"), ("Q3", Q3)]
        headers = {"Authorization": f"Bearer {bench.profile}", "content-type": "application/json"}
        print(idle_driver())
        print(f"in process: event loop CPU ms per request (median of {n}) and Python calls per request")

        async def measure_all() -> None:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench", headers=headers) as http:
                for name, query in cases:
                    body = orjson.dumps({"query": query})

                    async def post(body: bytes = body) -> object:
                        return (await http.post("/graphql", content=body)).raise_for_status()

                    for _ in range(50):  # the path warmed
                        await post()
                    for gap in gaps_ms:
                        cpu: list[float] = []  # seconds
                        for _ in range(n):
                            process_asleep(gap)
                            started = time.thread_time()
                            await post()
                            cpu.append(time.thread_time() - started)
                        process_asleep(gap)
                        counted = await python_calls(post)
                        print(
                            f"  {name:15} {gap:4g} ms asleep before each: {median(cpu) * 1000:5.2f} ms, {counted} calls"
                        )

        run(datastore, measure_all())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.wake")
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=40.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--in-process", action="store_true", help="why: CPU and Python calls per request, in process")
    args = parser.parse_args()
    if args.in_process:
        in_process(args.n, [0, 1, 3, 12, args.gap_ms])
        return
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        bench = on_fresh_table(base, local.endpoint_url)
        table, data = bench.settings.table_name, bench.data
        floor = Floor(stock_client(bench.settings), table, data)
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
