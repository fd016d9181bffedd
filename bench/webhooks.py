"""`python -m bench.webhooks [-n N] [--burst B]`: webhook delivery lag, and deliveries per second on one host.

A bench server process (bench.serve, one worker, its dispatcher on: the change feed wakes it)
on a fresh in-memory DynamoDB Local (or ``--endpoint``'s), one organisation with one endpoint
subscribed to ``department.*``, and a fast receiver on the loopback (answers 204 at once, in
this process's threads). Two phases:

1. lag: N createDepartment mutations one after another, each waiting for its delivery: the
   time from the mutation's answer reaching the client to the receiver getting the POST
   (the change feed's poll, the outbox write, the attempt, signing and the POST).
   ``webhook_lag_p50_ms``, ``webhook_lag_p95_ms``.
2. throughput: B mutations at once (BURST_CLIENTS clients), then until the last delivery:
   ``webhook_deliveries_per_second`` = B over the time from the burst's first request to
   the last POST received. One host: the server, DynamoDB Local, the clients and the receiver
   share its CPUs, so this is a floor, not the dispatcher's ceiling.

Writes the figures into bench/results/latest.json (under ``webhooks``, beside what
``python -m bench`` wrote), or ``--results``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.dataset import on_loop, provisioned
from bench.figures import RESULTS, pct
from bench.serving import API, Server, server_env
from datastore.dev.local import DynamoDBLocal
from datastore.kinds.entities import Employee, Plan
from datastore.table.store import Datastore
from datastore.tenancy.scope import TenantScope
from datastore.tenants.organizations import create_organization
from datastore.values.ids import new_id
from datastore.webhooks import endpoints
from graphql_api.auth.tokens import issue_token
from graphql_api.execution import ids
from graphql_api.settings import Settings

CREATE = "mutation Create($input: CreateDepartmentInput!) { createDepartment(input: $input) { department { id } } }"
BURST_CLIENTS = 8
WAIT_SECONDS = 60.0


class FastReceiver:
    """Answers every POST with 204 at once and notes when each object's event came."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                now = time.monotonic()
                self.send_response(204)
                self.end_headers()
                object_id = orjson.loads(body)["data"]["objectId"]
                with receiver.cond:
                    receiver.at.setdefault(object_id, now)
                    receiver.cond.notify_all()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, object_ids: list[str], seconds: float = WAIT_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        with self.cond:
            while not all(each in self.at for each in object_ids):
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = sum(each not in self.at for each in object_ids)
                    raise RuntimeError(f"{missing} of {len(object_ids)} deliveries did not come in {seconds:.0f} s")
                self.cond.wait(left)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def create(http: httpx.Client, name: str) -> str:
    """One createDepartment: the new department's id (as deliveries name it)."""
    answer = http.post("/graphql", json={"query": CREATE, "variables": {"input": {"name": name}}})
    answer.raise_for_status()
    global_id = answer.json()["data"]["createDepartment"]["department"]["id"]
    return ids.decode(global_id).parts[0]


def measure(endpoint_url: str, table_name: str, n: int, burst: int) -> dict[str, float]:
    settings = replace(Settings.load().datastore, endpoint_url=endpoint_url, table_name=table_name)
    receiver = FastReceiver()

    async def set_up(datastore: Datastore) -> Employee:
        # The table with its stream (the change feed wakes the dispatcher), one organisation and
        # its endpoint at the receiver.
        platform = await provisioned(datastore)
        domain = f"b{new_id().lower()}.example"
        org, admin = await create_organization(
            platform,
            name="Webhook Bench",
            plan=Plan.ENTERPRISE,
            email_domains=[domain],
            admin_email=f"admin@{domain}",
            admin_first_name="Ada",
            admin_last_name="Admin",
        )
        tenant = datastore.table(TenantScope(org.org_id, admin.emp_id))
        await endpoints.create_endpoint(tenant, url_text=receiver.url, types=["department.*"])
        return admin

    admin = on_loop(settings, set_up)
    # Development: the dispatcher may POST to the loopback (bench's HR_ENV refuses private addresses).
    server = Server(server_env(endpoint_url, table_name, HR_ENV="development"), quiet=True)
    token = issue_token(API, subject=admin.emp_id, org_id=admin.org_id, role=admin.role.value)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
            # Warm: the dispatcher holds its lease and has swept once before anything is timed.
            receiver.wait([create(http, "Warm-up")])
            lags: list[float] = []
            for i in range(n):
                object_id = create(http, f"Lag {i}")
                answered = time.monotonic()
                receiver.wait([object_id])
                lags.append(receiver.at[object_id] - answered)
        started = time.monotonic()
        local = threading.local()

        def one(i: int) -> str:
            if not hasattr(local, "http"):
                local.http = httpx.Client(base_url=server.url, headers=headers, timeout=60)
            return create(local.http, f"Burst {i}")

        with ThreadPoolExecutor(BURST_CLIENTS) as pool:
            made = list(pool.map(one, range(burst)))
        receiver.wait(made)
        last = max(receiver.at[each] for each in made)
    finally:
        server.stop()
        receiver.close()
    return {
        "webhook_lag_p50_ms": pct(lags, 0.50),
        "webhook_lag_p95_ms": pct(lags, 0.95),
        "webhook_deliveries_per_second": round(burst / (last - started), 1),
        "lag_samples": n,
        "burst": burst,
    }


def write(figures: dict[str, float], path: Path) -> None:
    """Merge ``figures`` into the results file under ``webhooks`` (the bench's other figures kept)."""
    found: dict[str, Any] = orjson.loads(path.read_bytes()) if path.exists() else {}
    found["webhooks"] = figures
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(found, option=orjson.OPT_INDENT_2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webhooks", description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50, help="mutations timed one at a time (lag)")
    parser.add_argument("--burst", type=int, default=200, help="mutations sent at once (deliveries per second)")
    parser.add_argument("--endpoint", help="a running DynamoDB Local's URL (default: a fresh in-memory one)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    table_name = f"hr-bench-webhooks-{new_id().lower()}"
    if args.endpoint:
        figures = measure(args.endpoint, table_name, args.n, args.burst)
    else:
        with DynamoDBLocal(Settings.load().datastore.local_cache_dir) as local:
            figures = measure(local.endpoint_url, table_name, args.n, args.burst)
    print(f"webhook lag (mutation answered -> receiver got the POST), {args.n} one at a time:")
    print(f"  p50 {figures['webhook_lag_p50_ms']} ms, p95 {figures['webhook_lag_p95_ms']} ms")
    print(f"deliveries per second, a burst of {args.burst} ({BURST_CLIENTS} clients), one host:")
    print(f"  {figures['webhook_deliveries_per_second']}")
    write(figures, args.results)
    print(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
