"""`python -m bench.fairness`: a quiet tenant's latency alone and beside a tenant sending 10x more.

Two organisations of the same shape (20 departments x 50 employees) on one server process
and a fresh DynamoDB Local. Both send PAGE, the directory's first page with 10 people per
department (cost 547), from paced concurrent clients (QUIET_CLIENTS and RATIO times as many).
Each phase runs a fixed time; a client that falls behind sends its next request at once (no
backlog), so the load is bounded. Each tenant's clients run in a process of their own, so the
quiet tenant's latencies are never taken on an event loop busy with the noisy tenant's
responses. The server runs one worker process a CPU (``--workers``), as production does.

The limit is scaled to the machine, as an operator scales it to a fleet: the production
default (30,000 units/s, twelve Q1 pages a second) is more than a laptop or a shared CI box
serves in all, and a limit above capacity protects nothing. So the bench first measures the
server's capacity C (PAGE requests/s, CALIBRATE_CLIENTS closed-loop clients), then offers
the quiet tenant C/10 and the noisy one C (10x, enough to saturate the server alone), and
gives each tenant a bucket refilling at SHARE x C pages' worth of cost a second, which the
server's workers share (graphql_api/limits/shared_buckets.py; burst: two seconds, at least
MAX_QUERY_COST). ``--share`` sets the share, repeated for a run at each. Phases:

1. the quiet tenant alone, limit on;
2. quiet and noisy together, limit on: the noisy tenant is refused (429) past its bucket;
3. (for contrast, unless --no-contrast) quiet and noisy together with the limit off.

Prints a table of each tenant's admitted and refused rates and the quiet tenant's p50/p95,
and the ratio of the quiet p95 beside the noisy tenant to its p95 alone (target: at most
1.5x with the limit on). Writes bench/results/fairness.json.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import orjson
from graphql import parse

from bench.dataset import Dataset, build, on_loop, provisioned
from bench.figures import pct
from bench.queries import Q1
from bench.serving import API, Server, server_env
from datastore.dev.local import DynamoDBLocal
from datastore.dev.seed import Bulk
from datastore.kinds.entities import Plan
from datastore.table.scoped import Table
from datastore.table.store import Datastore
from datastore.tenants import organizations
from datastore.values import ids
from graphql_api.auth.tokens import issue_token
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.query_cost import query_cost
from graphql_api.schema.executable import build_schema
from graphql_api.settings import Settings

RESULTS = Path(__file__).parent / "results" / "fairness.json"
QUIET_CLIENTS, RATIO, SECONDS = 2, 10, 30.0
CALIBRATE_CLIENTS, CALIBRATE_SECONDS = 4, 6.0
# Each tenant's share of the server's capacity: the quiet tenant needs 0.1, so it is never
# limited; the noisy tenant gets 0.2, a fifth of the server (README "Fair tenants": at 0.3
# the quiet tenant's p95 beside it measured 1.44x and 1.51x its p95 alone, at 0.2 1.16x and
# 1.40x).
SHARE = 0.2
# One server worker a CPU, as `WORKERS` is set in production.
WORKERS = os.cpu_count() or 1
PAGE = Q1.replace("employees(first: 50)", "employees(first: 10)")
PAGE_COST = query_cost(graphql_schema(build_schema()), parse(PAGE))


@dataclass
class Tally:
    """One tenant's requests in one phase."""

    latencies: list[float] = field(default_factory=list)  # admitted requests only
    refused: int = 0
    failed: int = 0

    def row(self, seconds: float) -> dict[str, Any]:
        return {
            "admitted_per_s": round(len(self.latencies) / seconds, 1),
            "refused_per_s": round(self.refused / seconds, 1),
            "failed": self.failed,
            "p50_ms": pct(self.latencies, 0.5) if self.latencies else None,
            "p95_ms": pct(self.latencies, 0.95) if self.latencies else None,
        }


async def quiet_tenant(platform: Table) -> str:
    """A second organisation shaped like the bench's (20 departments of 50); its admin's token."""
    _, admin = await organizations.create_organization(
        platform,
        name="Quiet Co",
        plan=Plan.ENTERPRISE,
        email_domains=["quiet.example"],
        admin_email="admin@quiet.example",
        admin_first_name="Quinn",
        admin_last_name="Quiet",
    )
    bulk = Bulk(admin.org_id)
    departments = [bulk.department(f"Department {d:02}", 50) for d in range(20)]
    for n in range(1000):
        bulk.employee(departments[n // 50], n)
    await bulk.write(platform)
    return issue_token(API, subject=admin.emp_id, org_id=admin.org_id, role="admin")


async def client_loop(http: httpx.AsyncClient, token: str, rate: float, end: float, tally: Tally) -> None:
    """PAGE every 1/rate seconds until ``end``; a late request is followed by the next at once."""
    interval = 1 / rate
    next_at = time.perf_counter() + random.uniform(0, interval)  # spread the clients' phases
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
    body = orjson.dumps({"query": PAGE})
    while True:
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        if time.perf_counter() >= end:
            return
        started = time.perf_counter()
        try:
            response = await http.post("/graphql", content=body, headers=headers)
        except httpx.HTTPError:
            tally.failed += 1
        else:
            if response.status_code == 429:
                tally.refused += 1
            elif response.status_code == 200 and b'"errors"' not in response.content:
                tally.latencies.append(time.perf_counter() - started)
            else:
                tally.failed += 1
        next_at = max(next_at + interval, time.perf_counter())


async def tenant_clients(url: str, token: str, clients: int, rate: float, start_at: float, seconds: float) -> Tally:
    """One tenant's ``clients`` paced clients, from ``start_at`` (time.monotonic) for ``seconds``."""
    tally = Tally()
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        end = time.perf_counter() + seconds
        await asyncio.gather(*(client_loop(http, token, rate, end, tally) for _ in range(clients)))
    return tally


def run_tenant(url: str, token: str, clients: int, rate: float, start_at: float, seconds: float) -> Tally:
    return asyncio.run(tenant_clients(url, token, clients, rate, start_at, seconds))


def phase(url: str, tenants: list[tuple[str, int, float]], seconds: float) -> list[Tally]:
    """Run each (token, clients, rate per client) tenant's paced clients for ``seconds``.

    Each tenant's clients run in a process of their own, as two organisations' browsers are
    on machines of their own: the quiet tenant's latencies are never measured on an event
    loop that is also parsing the noisy tenant's responses.
    """
    start_at = time.monotonic() + 1.0  # every process ready before the first request
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(len(tenants), mp_context=context) as pool:
        futures = [
            pool.submit(run_tenant, url, token, clients, rate, start_at, seconds) for token, clients, rate in tenants
        ]
        return [future.result() for future in futures]


def warm(url: str, *tokens: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        for token in tokens:
            for _ in range(3):
                http.post("/graphql", json={"query": PAGE}, headers={"Authorization": f"Bearer {token}"})


async def capacity(url: str, token: str) -> float:
    """PAGE requests a second the server completes for closed-loop clients (limit off)."""
    done = 0
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        end = time.perf_counter() + CALIBRATE_SECONDS
        headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
        body = orjson.dumps({"query": PAGE})

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < end:
                (await http.post("/graphql", content=body, headers=headers)).raise_for_status()
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CALIBRATE_CLIENTS)))
        return done / (time.perf_counter() - started)


def print_table(rows: dict[str, dict[str, Any]]) -> None:
    columns = ["admitted_per_s", "refused_per_s", "failed", "p50_ms", "p95_ms"]
    print(f"\n{'':34}" + "".join(f"{c:>16}" for c in columns))
    for name, row in rows.items():
        print(f"{name:34}" + "".join(f"{row.get(c, '-')!s:>16}" for c in columns))


def limited(share: float, capacity: float) -> tuple[int, int]:
    """TENANT_COST_PER_SECOND and TENANT_COST_BURST for ``share`` of the server's capacity.

    The server's workers share each tenant's bucket (README "Fair tenants"), so a tenant is
    admitted ``share`` x capacity pages' worth however many workers serve it. The burst is
    two seconds of refill, and at least MAX_QUERY_COST.
    """
    per_second = max(1, round(share * capacity * PAGE_COST))
    return per_second, max(API.max_cost, 2 * per_second)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=SECONDS, help="length of each phase")
    parser.add_argument("--no-contrast", action="store_true", help="skip the phase with the limit off")
    parser.add_argument(
        "--share",
        type=float,
        action="append",
        help=f"each tenant's share of capacity; repeat for several runs (default {SHARE})",
    )
    parser.add_argument(
        "--workers", type=int, default=WORKERS, help=f"server worker processes (default {WORKERS}, one a CPU)"
    )
    args = parser.parse_args()
    seconds: float = min(max(args.seconds, 5.0), 60.0)  # bounded whatever is asked
    shares: list[float] = [min(max(share, 0.01), 1.0) for share in (args.share or [SHARE])]
    workers: int = min(max(args.workers, 1), 8)
    started = time.monotonic()
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        table_name = f"hr-bench-{ids.new_id().lower()}"
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=table_name)

        async def seed(datastore: Datastore) -> tuple[Dataset, str]:
            platform = await provisioned(datastore)
            return await build(platform), await quiet_tenant(platform)

        data, quiet = on_loop(settings, seed)
        noisy = issue_token(API, subject=data.admin.emp_id, org_id=data.org_id, role="admin")
        print(f"dataset ready in {time.monotonic() - started:.1f}s", flush=True)
        env = server_env(
            local.endpoint_url,
            table_name,
            COST_IN_RESPONSE="false",
            MAX_QUERY_COST=str(API.max_cost),
            TENANT_COST_PER_SECOND="0",
        )
        flags = ("--workers", str(workers)) if workers > 1 else ()
        contrast: dict[str, dict[str, Any]] = {}
        server = Server(env, *flags)
        try:
            warm(server.url, quiet, noisy)
            pages_per_second = asyncio.run(capacity(server.url, quiet))
            quiet_rate = pages_per_second / 10 / QUIET_CLIENTS  # per client
            together = [(quiet, QUIET_CLIENTS, quiet_rate), (noisy, QUIET_CLIENTS * RATIO, quiet_rate)]
            print(f"capacity {pages_per_second:.1f} pages/s with {workers} worker(s)", flush=True)
            if not args.no_contrast:
                quiet_tally, noisy_tally = phase(server.url, together, seconds)
                contrast["quiet beside noisy, limit off"] = quiet_tally.row(seconds)
                contrast["  noisy, limit off"] = noisy_tally.row(seconds)
        finally:
            server.stop()
        runs: list[dict[str, Any]] = []
        for share in shares:
            per_second, burst = limited(share, pages_per_second)
            limit_env = {**env, "TENANT_COST_PER_SECOND": str(per_second), "TENANT_COST_BURST": str(burst)}
            rows: dict[str, dict[str, Any]] = {}
            server = Server(limit_env, *flags)
            try:
                warm(server.url, quiet, noisy)
                time.sleep(burst / per_second)  # buckets full again
                [alone] = phase(server.url, together[:1], seconds)
                rows["quiet alone, limit on"] = alone.row(seconds)
                time.sleep(burst / per_second)
                quiet_tally, noisy_tally = phase(server.url, together, seconds)
                rows["quiet beside noisy, limit on"] = quiet_tally.row(seconds)
                rows["  noisy, limit on"] = noisy_tally.row(seconds)
            finally:
                server.stop()
            rows.update(contrast)
            base_p95 = rows["quiet alone, limit on"]["p95_ms"]
            ratios = {
                name: round(rows[name]["p95_ms"] / base_p95, 2) if rows[name]["p95_ms"] and base_p95 else None
                for name in ("quiet beside noisy, limit on", "quiet beside noisy, limit off")
                if name in rows
            }
            runs.append(
                {
                    "share": share,
                    "tenant_cost_per_second": per_second,
                    "tenant_cost_burst": burst,
                    "rows": rows,
                    "p95_ratio": ratios,
                }
            )
    print(
        f"\nfairness: PAGE (cost {PAGE_COST}) from {QUIET_CLIENTS} quiet and {QUIET_CLIENTS * RATIO} noisy "
        f"clients at {quiet_rate:.2f} request/s each, {seconds:g} s a phase, each tenant's clients in a "
        f"process of their own; {workers} server worker(s); capacity {pages_per_second:.1f} pages/s; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    order = [
        "quiet alone, limit on",
        "quiet beside noisy, limit on",
        "  noisy, limit on",
        "quiet beside noisy, limit off",
        "  noisy, limit off",
    ]
    for run in runs:
        print(
            f"\nshare {run['share']:g} of capacity a tenant: TENANT_COST_PER_SECOND={run['tenant_cost_per_second']}, "
            f"TENANT_COST_BURST={run['tenant_cost_burst']} for the server"
        )
        print_table({name: run["rows"][name] for name in order if name in run["rows"]})
        for name, ratio in run["p95_ratio"].items():
            print(f"{name}: p95 {ratio}x the quiet tenant's p95 alone (target with the limit on: <= 1.5x)")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_bytes(
        orjson.dumps(
            {
                "seconds_per_phase": seconds,
                "quiet_clients": QUIET_CLIENTS,
                "noisy_clients": QUIET_CLIENTS * RATIO,
                "query": PAGE,
                "query_cost": PAGE_COST,
                "workers": workers,
                "capacity_pages_per_s": round(pages_per_second, 2),
                "rate_per_client": round(quiet_rate, 3),
                "cpus": os.cpu_count(),
                "load_average": os.getloadavg(),
                "runs": runs,
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    print(f"\nwrote {RESULTS} in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
