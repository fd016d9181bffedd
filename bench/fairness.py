"""`python -m bench.fairness`: a quiet tenant's latency alone and beside a tenant sending 10x more.

Two organisations of the same shape (20 departments x 50 employees) on one server process
and a fresh DynamoDB Local. Both send bench Q1 (the directory page, cost 2,547) from paced
concurrent clients: the quiet tenant QUIET_CLIENTS x RATE requests a second, the noisy one
RATIO times as many. Each phase runs a fixed time; a client that falls behind sends its next
request at once (no backlog), so the load is bounded. Phases:

1. the quiet tenant alone, with the tenant rate limit on (the defaults of graphql_api/config.py);
2. quiet and noisy together, limit on: the noisy tenant is refused (429) past its bucket;
3. (for contrast, unless --no-contrast) the same on a server with the limit off.

Prints a table of the quiet tenant's p50/p95 and each tenant's admitted and refused rates,
and the ratio of the quiet p95 under the noisy tenant to its p95 alone (target: at most
1.5x with the limit on). Writes bench/results/fairness.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.__main__ import Q1, SECRET, Server, pct
from bench.dataset import build
from datastore import calls, keys, organizations
from datastore.client import make_client
from datastore.config import DatastoreSettings
from datastore.entities import Plan
from datastore.local import DynamoDBLocal
from datastore.provision import ensure_table
from datastore.scope import PlatformScope
from datastore.table import Table
from graphql_api.auth import issue_token
from graphql_api.config import ApiSettings
from tests.graphql_api.bulk import Bulk

RESULTS = Path(__file__).parent / "results" / "fairness.json"
QUIET_CLIENTS, RATE, RATIO, SECONDS = 2, 1.0, 10, 20.0
DEFAULTS = ApiSettings.from_env({"HR_ENV": "bench", "JWT_SECRET": SECRET})


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


def quiet_tenant(client: Any, table_name: str) -> str:
    """A second organisation shaped like the bench's (20 departments of 50); its admin's token."""
    _, admin = organizations.create_organization(
        Table(client, table_name, PlatformScope()),
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
    bulk.write(client, table_name)
    return issue_token(DEFAULTS, subject=admin.emp_id, org_id=admin.org_id, role="admin")


async def client_loop(http: httpx.AsyncClient, token: str, rate: float, end: float, tally: Tally) -> None:
    """Q1 every 1/rate seconds until ``end``; a late request is followed by the next at once."""
    interval = 1 / rate
    next_at = time.perf_counter() + random.uniform(0, interval)  # spread the clients' phases
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
    body = orjson.dumps({"query": Q1})
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


async def phase(url: str, tenants: list[tuple[str, int]], seconds: float) -> list[Tally]:
    """Run each (token, clients) tenant's paced clients for ``seconds``; their tallies."""
    tallies = [Tally() for _ in tenants]
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        end = time.perf_counter() + seconds
        await asyncio.gather(
            *(
                client_loop(http, token, RATE, end, tally)
                for (token, clients), tally in zip(tenants, tallies, strict=True)
                for _ in range(clients)
            )
        )
    return tallies


def warm(url: str, *tokens: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        for token in tokens:
            for _ in range(3):
                http.post("/graphql", json={"query": Q1}, headers={"Authorization": f"Bearer {token}"})


def print_table(rows: dict[str, dict[str, Any]]) -> None:
    columns = ["admitted_per_s", "refused_per_s", "failed", "p50_ms", "p95_ms"]
    print(f"\n{'':34}" + "".join(f"{c:>16}" for c in columns))
    for name, row in rows.items():
        print(f"{name:34}" + "".join(f"{row.get(c, '-')!s:>16}" for c in columns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=SECONDS, help="length of each phase")
    parser.add_argument("--no-contrast", action="store_true", help="skip the phase with the limit off")
    args = parser.parse_args()
    seconds: float = min(max(args.seconds, 5.0), 60.0)  # bounded whatever is asked
    started = time.monotonic()
    base = DatastoreSettings.from_env()
    with DynamoDBLocal(base.local_cache_dir) as local:
        table_name = f"hr-bench-{keys.new_id().lower()}"
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=table_name)
        client = calls.instrument(make_client(settings))
        ensure_table(client, table_name)
        data = build(client, table_name)
        noisy = issue_token(DEFAULTS, subject=data.admin.emp_id, org_id=data.org_id, role="admin")
        quiet = quiet_tenant(client, table_name)
        print(f"dataset ready in {time.monotonic() - started:.1f}s", flush=True)
        env = {
            **os.environ,
            "DYNAMODB_ENDPOINT": local.endpoint_url,
            "HR_TABLE_NAME": table_name,
            "HR_ENV": "bench",
            "JWT_SECRET": SECRET,
            "COST_IN_RESPONSE": "false",
            "PYTHONPATH": os.getcwd(),
            "MAX_QUERY_COST": str(DEFAULTS.max_cost),
            "TENANT_COST_PER_SECOND": str(DEFAULTS.tenant_cost_per_second),
            "TENANT_COST_BURST": str(DEFAULTS.tenant_cost_burst),
        }
        quiet_alone = [(quiet, QUIET_CLIENTS)]
        together = [(quiet, QUIET_CLIENTS), (noisy, QUIET_CLIENTS * RATIO)]
        rows: dict[str, dict[str, Any]] = {}
        server = Server(env, naive=False)
        try:
            warm(server.url, quiet, noisy)
            time.sleep(DEFAULTS.tenant_cost_burst / DEFAULTS.tenant_cost_per_second)  # buckets full again
            [alone] = asyncio.run(phase(server.url, quiet_alone, seconds))
            rows["quiet alone, limit on"] = alone.row(seconds)
            time.sleep(DEFAULTS.tenant_cost_burst / DEFAULTS.tenant_cost_per_second)
            quiet_tally, noisy_tally = asyncio.run(phase(server.url, together, seconds))
            rows["quiet beside noisy, limit on"] = quiet_tally.row(seconds)
            rows["  noisy, limit on"] = noisy_tally.row(seconds)
        finally:
            server.stop()
        if not args.no_contrast:
            server = Server({**env, "TENANT_COST_PER_SECOND": "0"}, naive=False)
            try:
                warm(server.url, quiet, noisy)
                quiet_tally, noisy_tally = asyncio.run(phase(server.url, together, seconds))
                rows["quiet beside noisy, limit off"] = quiet_tally.row(seconds)
                rows["  noisy, limit off"] = noisy_tally.row(seconds)
            finally:
                server.stop()
    print(
        f"\nfairness: Q1 (cost 2,547) from {QUIET_CLIENTS} quiet and {QUIET_CLIENTS * RATIO} noisy clients "
        f"at {RATE:g} request/s each, {seconds:g} s a phase; TENANT_COST_PER_SECOND="
        f"{DEFAULTS.tenant_cost_per_second}, TENANT_COST_BURST={DEFAULTS.tenant_cost_burst}"
    )
    print_table(rows)
    base_p95 = rows["quiet alone, limit on"]["p95_ms"]
    ratios: dict[str, float | None] = {}
    for name in ("quiet beside noisy, limit on", "quiet beside noisy, limit off"):
        p95 = rows.get(name, {}).get("p95_ms")
        ratios[name] = round(p95 / base_p95, 2) if p95 and base_p95 else None
        if name in rows:
            print(f"{name}: p95 {ratios[name]}x the quiet tenant's p95 alone (target with the limit on: <= 1.5x)")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_bytes(
        orjson.dumps(
            {
                "seconds_per_phase": seconds,
                "quiet_clients": QUIET_CLIENTS,
                "noisy_clients": QUIET_CLIENTS * RATIO,
                "rate_per_client": RATE,
                "tenant_cost_per_second": DEFAULTS.tenant_cost_per_second,
                "tenant_cost_burst": DEFAULTS.tenant_cost_burst,
                "cpus": os.cpu_count(),
                "load_average": os.getloadavg(),
                "rows": rows,
                "p95_ratio": ratios,
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    print(f"\nwrote {RESULTS} in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
