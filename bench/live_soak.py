"""`python -m bench.live_soak --minutes N --subscribers M`: each worker's memory under live load.

``server.py run`` with WORKERS (2) on a fresh in-memory DynamoDB Local, as an operator runs
it; M WebSocket subscribers of one organisation (graphql-transport-ws, the ``websockets``
library, in this process) on ``auditEventAdded``, spread over the workers by the kernel;
a department created every 1/RATE seconds (each one audit event, delivered to every
subscriber) for N minutes. Every ``--every`` seconds each worker's resident set (VmRSS) and
open file descriptors (/proc/<pid>/fd) are printed, the worker holding the stream lease
marked; then, per worker, the figures at the start, at the middle and at the end, and the
growth over the second half: a worker that levels off grows by little there, one that leaks
grows as much as in the first. Figures, never assertions; nothing here runs in the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench.dataset import on_loop, provisioned
from bench.serving import API, SECRET
from datastore.dev.local import DynamoDBLocal, free_port
from datastore.feed.lease import Lease, group_name
from datastore.kinds.entities import Plan
from datastore.table.scoped import Table
from datastore.table.store import Datastore
from datastore.tenancy.scope import TenantScope
from datastore.tenants import departments, organizations
from datastore.values.ids import new_id
from graphql_api.auth.tokens import issue_token
from graphql_api.host.files import owner_tag
from graphql_api.settings import Settings, child_environment

SUBSCRIPTION = "subscription { auditEventAdded { cursor action event { entityId } } }"
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Sample:
    at: float  # seconds since the load started
    rss_mb: float
    fds: int
    reader: bool


@dataclass
class Tally:
    delivered: int = 0
    closes: dict[int, int] = field(default_factory=dict)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def workers_of(server: int) -> list[int]:
    """The uvicorn workers: the server's children running ``spawn_main``."""
    found = []
    for pid in children(server):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return sorted(found)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def subscriber(url: str, token: str, tally: Tally, stop: asyncio.Event) -> None:
    """One client for the whole run: it reads every message (answering pings) until ``stop``."""
    ws: ClientConnection = await connect(url, subprotocols=["graphql-transport-ws"])  # type: ignore[list-item]
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
    ack = json.loads(await ws.recv())
    assert ack["type"] == "connection_ack", ack
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
    try:
        while not stop.is_set():
            try:
                message = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
            except TimeoutError:
                continue
            if message["type"] == "ping":
                await ws.send(json.dumps({"type": "pong"}))
            elif message["type"] == "next":
                tally.delivered += 1
    except Exception as ended:
        code = getattr(getattr(ended, "rcvd", None), "code", 1006)
        tally.closes[code] = tally.closes.get(code, 0) + 1
    finally:
        await ws.close()


async def write(table: Table, rate: float, stop: asyncio.Event, written: list[int]) -> None:
    n = 0
    while not stop.is_set():
        began = time.monotonic()
        await departments.create_department(table, name=f"Soak {n}")
        n += 1
        written[0] = n
        await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - began)))


async def soak(
    args: argparse.Namespace, server: asyncio.subprocess.Process, url: str, token: str, lease: Lease, tenant: Table
) -> None:
    tally = Tally()
    stop = asyncio.Event()
    clients = [asyncio.create_task(subscriber(url, token, tally, stop)) for _ in range(args.subscribers)]
    await asyncio.sleep(2)
    stopping = asyncio.Event()
    written = [0]
    began = time.monotonic()
    writer = asyncio.create_task(write(tenant, args.rate, stopping, written))
    samples: dict[int, list[Sample]] = {}
    print(f"{'s':>5}  " + "  ".join(f"{'worker':>8} {'RSS MB':>7} {'fds':>4}" for _ in range(args.workers)))
    try:
        while (elapsed := time.monotonic() - began) < args.minutes * 60:
            current = await lease.current()
            reader = int(current.holder.split("-")[0]) if current is not None else None
            row = []
            for pid in workers_of(server.pid):
                try:
                    sample = Sample(elapsed, rss_mb(pid), open_fds(pid), pid == reader)
                except OSError:
                    continue
                samples.setdefault(pid, []).append(sample)
                row.append(f"{pid:>7}{'*' if sample.reader else ' '} {sample.rss_mb:>7.1f} {sample.fds:>4}")
            print(f"{elapsed:>5.0f}  " + "  ".join(row), flush=True)
            await asyncio.sleep(args.every)
    finally:
        stopping.set()
        await asyncio.wait_for(writer, timeout=30)
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
    print(
        f"\n* holds the stream lease. {written[0]} events written ({args.rate:g}/s), {tally.delivered} deliveries "
        f"to {args.subscribers} subscribers; closes by code: {tally.closes or 'none'}"
    )
    for pid, taken in sorted(samples.items()):
        if len(taken) < 3:
            continue
        first, middle, last = taken[0], taken[len(taken) // 2], taken[-1]
        role = "reader" if any(s.reader for s in taken) else "follower"
        minutes = max(1e-9, (last.at - middle.at) / 60)
        print(
            f"worker {pid} ({role}): RSS {first.rss_mb:.1f} -> {middle.rss_mb:.1f} -> {last.rss_mb:.1f} MB "
            f"(max {max(s.rss_mb for s in taken):.1f}), fds {first.fds} -> {middle.fds} -> {last.fds}; "
            f"second half: {(last.rss_mb - middle.rss_mb) / minutes:+.1f} MB/min, {last.fds - middle.fds:+d} fds"
        )


async def started(port: int, server: asyncio.subprocess.Process) -> None:
    """Once the server answers /healthz (two minutes at most)."""
    deadline = time.monotonic() + 120
    async with httpx.AsyncClient(timeout=1) as http:
        while True:
            try:
                if (await http.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.returncode is not None:
                raise RuntimeError("the server did not start")
            await asyncio.sleep(0.3)


async def lane(args: argparse.Namespace, datastore: Datastore, endpoint: str) -> None:
    """The organisation seeded, the server started, the soak run, the server stopped."""
    platform = await provisioned(datastore)
    org, admin = await organizations.create_organization(
        platform,
        name="Soak Co",
        plan=Plan.PRO,
        email_domains=["soak.example"],
        admin_email="admin@soak.example",
        admin_first_name="Ada",
        admin_last_name="Admin",
    )
    token = issue_token(API, subject=admin.emp_id, org_id=org.org_id, role="admin")
    port = free_port()
    env = child_environment(
        {
            "DYNAMODB_ENDPOINT": endpoint,
            "HR_TABLE_NAME": datastore.table_name,
            "HR_ENV": "bench",
            "ALLOWED_HOSTS": "127.0.0.1",
            "JWT_SECRET": SECRET,
            "WORKERS": str(args.workers),
            "PORT": str(port),
            "METRICS_PORT": "",
            "LOG_FORMAT": "json",
            "TENANT_COST_PER_SECOND": "0",
            "SUBSCRIPTION_CONNECTIONS_PER_TENANT": str(args.subscribers + 10),
            "PYTHONPATH": str(ROOT),
        }
    )
    server = await asyncio.create_subprocess_exec(
        sys.executable, "server.py", "run", cwd=ROOT, env=env, stdout=asyncio.subprocess.DEVNULL
    )
    try:
        await started(port, server)
        tag = owner_tag(server.pid)
        lease = Lease(platform, group_name(socket.gethostname(), tag or server.pid), "bench", 10.0)
        tenant = platform.with_scope(TenantScope(org.org_id, admin.emp_id))
        await soak(args, server, f"ws://127.0.0.1:{port}/graphql", token, lease, tenant)
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 60)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.live_soak")
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--subscribers", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rate", type=float, default=10.0, help="events written per second")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between two samples")
    args = parser.parse_args()
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-soak-{new_id().lower()}")
        on_loop(settings, lambda datastore: lane(args, datastore, local.endpoint_url))


if __name__ == "__main__":
    main()
