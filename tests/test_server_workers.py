"""``server.py run`` with WORKERS=2 as an operator runs it: killed outright, and under one busy tenant.

Killed with SIGKILL, the server runs no cleanup; its workers, multiprocessing's resource
tracker and the embedded DynamoDB Local must all end anyway (graphql_api/entrypoints/worker_process.py,
datastore/dev/local.py), leaving the port free for a server started at once on the same port and
data, which also removes the metrics directory the killed one left.

One organisation's clients on eight kept-alive connections, four on each worker, are admitted
what TENANT_COST_PER_SECOND allows the server, not a bucket's worth per worker
(graphql_api/limits/shared_buckets.py); the admitted rate is printed.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx
import pytest

from datastore.dev.local import free_port
from graphql_api.host.files import remove_orphans, runtime_dir
from graphql_api.limits import shared_buckets
from tests import server_process
from tests.conftest import Tenant
from tests.graphql_api.fixtures import TEST_SECRET, Api
from tests.test_server import engine_pids

GONE_WITHIN_SECONDS = 30.0


@dataclass(frozen=True)
class Process:
    pid: int
    cmdline: str


def state(pid: int) -> tuple[int, str] | None:
    """``pid``'s parent and state letter, or None once it has exited."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0]


def descendants(root: int) -> list[Process]:
    """Every live process whose parent chain leads to ``root``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := state(int(entry.name))) is not None and found[1] != "Z":
            parents[int(entry.name)] = found[0]
    family, grew = {root}, True
    while grew:
        children = {pid for pid, parent in parents.items() if parent in family} - family
        family |= children
        grew = bool(children)
    out = []
    for pid in sorted(family - {root}):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        out.append(Process(pid, cmdline))
    return out


def running(pid: int) -> bool:
    found = state(pid)
    return found is not None and found[1] != "Z"  # a zombie holds nothing: dead, not yet reaped


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_run__two_workers__parent_killed__nothing_left_and_restarts_at_once(tmp_path: Path) -> None:
    data_dir, temporary = tmp_path / "dynamodb", tmp_path / "tmp"
    temporary.mkdir()
    port = free_port()
    env = {
        "WORKERS": "2",
        "DYNAMODB_LOCAL_DATA": str(data_dir),
        "DYNAMODB_LOCAL_PORT": str(free_port()),
        "METRICS_PORT": str(free_port()),
        "SHUTDOWN_GRACE_SECONDS": "5",
        # The metrics directory goes here, where only this test's servers put theirs.
        "TMPDIR": str(temporary),
        "DYNAMODB_ENDPOINT": "",
    }
    server = server_process.start(env, port)
    family: list[Process] = []
    try:
        family = descendants(server.process.pid)
        kinds = collections.Counter(
            "worker"
            if "spawn_main" in p.cmdline
            else "tracker"
            if "resource_tracker" in p.cmdline
            else "engine"
            if str(data_dir) in p.cmdline
            else "other"
            for p in family
        )
        assert kinds == {"worker": 2, "tracker": 1, "engine": 1}, family
        [left] = list(temporary.glob("hr-metrics-*"))
        buckets = shared_buckets.table_of(server.process.pid)  # the tenant buckets its workers share
        assert buckets is not None and buckets.is_file()

        server.process.kill()  # SIGKILL: the server runs no cleanup at all
        server.process.wait(timeout=10)

        deadline = time.monotonic() + GONE_WITHIN_SECONDS
        while any(running(p.pid) for p in family) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in family if running(p.pid)] == []
        assert engine_pids(data_dir) == []  # nor, by its command line, any engine on these files
        server.close()
        assert port_free(port)
        assert left.is_dir() and buckets.is_file()  # left behind, as nothing ran

        started = time.monotonic()
        again = server_process.start(env, port)
        took = time.monotonic() - started
        try:
            assert httpx.get(f"{again.url}/healthz").json() == {"status": "ok"}
        finally:
            assert again.stop(signal.SIGTERM) == 0
        print(f"\nevery process of the killed server gone, the same port and data served again in {took:.1f} s")
        for path in (left, buckets):
            assert f"removed {path}, left by a server that was killed" in again.output()
            assert not path.exists()
    finally:
        for process in family:
            if running(process.pid):
                os.kill(process.pid, signal.SIGKILL)
        if server.process.poll() is None:
            server.process.kill()
        server.process.wait(timeout=10)
        server.close()


# --- one busy tenant, two workers -----------------------------------------------------------

RATE = 100  # cost units a second, for the server
BURST = 100
ME = "{ me { email } }"  # cost 2
ME_COST = 2
WORKERS = 2
PER_WORKER = 4
SECONDS = 6.0


@dataclass
class Tally:
    codes: collections.Counter[int]
    first_sent: float
    last_answered: float


def worker_of(server: server_process.ServerProcess, request_id: str) -> int:
    """The pid of the worker whose access line carries ``request_id`` (lines arrive as they are written)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in list(server.lines):
            if request_id in line and line.startswith("{"):
                return int(json.loads(line)["pid"])
        time.sleep(0.02)
    raise AssertionError(f"no access line for {request_id}")


def connections_on_each_worker(server: server_process.ServerProcess, token: str) -> list[httpx.Client]:
    """``PER_WORKER`` kept-alive connections on each worker: opened one by one, each kept or
    closed by the worker its first (anonymous, so uncharged) request reached."""
    kept: dict[int, list[httpx.Client]] = collections.defaultdict(list)
    for attempt in range(100):
        if len(kept) == WORKERS and all(len(clients) == PER_WORKER for clients in kept.values()):
            break
        http = httpx.Client(base_url=server.url, timeout=30)
        request_id = f"connect-{attempt}-{time.monotonic_ns()}"
        try:
            http.post("/graphql", json={"query": "{ __typename }"}, headers={"X-Request-Id": request_id})
            clients = kept[worker_of(server, request_id)]
        except BaseException:
            http.close()
            raise
        if len(clients) < PER_WORKER:
            http.headers["Authorization"] = f"Bearer {token}"
            clients.append(http)
        else:
            http.close()
    found = [http for clients in kept.values() for http in clients]
    if len(found) != WORKERS * PER_WORKER:
        for http in found:
            http.close()
        raise AssertionError(f"the kernel kept giving connections to one worker: {dict(kept)}")
    return found


def busy_tenant(clients: list[httpx.Client]) -> Tally:
    """Each client asking ``me`` flat out on its kept-alive connection for ``SECONDS``."""
    codes: collections.Counter[int] = collections.Counter()
    times: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + SECONDS

    def client(http: httpx.Client) -> None:
        try:
            while time.monotonic() < stop:
                sent = time.monotonic()
                response = http.post("/graphql", json={"query": ME})
                with lock:
                    codes[response.status_code] += 1
                    times.extend((sent, time.monotonic()))
        finally:
            http.close()

    threads = [threading.Thread(target=client, args=(http,), name=f"tenant-{i}") for i, http in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=SECONDS + 60)
    return Tally(codes, min(times), max(times))


def graphql_lines_by_worker(output: str) -> dict[int, collections.Counter[int]]:
    """Each worker's ``me`` answers by status, from its JSON access lines (not the connecting ones)."""
    by_worker: dict[int, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    for line in output.splitlines():
        if line.startswith("{") and '"hr.access"' in line:
            record = json.loads(line)
            if record["path"] == "/graphql" and not record["requestId"].startswith("connect-"):
                by_worker[record["pid"]][record["status"]] += 1
    return by_worker


@pytest.mark.parametrize("entry", ["server.py run", "uvicorn --workers"])
def test_two_workers__one_busy_tenant__admitted_at_the_servers_rate(
    dynamodb_endpoint: str, streamed_table_name: str, api: Api, streamed_tenant: Tenant, entry: str
) -> None:
    """The same through ``server.py run`` (WORKERS=2) and the production ``uvicorn --workers 2``.

    On the session's streamed table: ``server.py run`` turns its table's stream on at start."""
    tenant = streamed_tenant
    env = {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": streamed_table_name,
        "HR_ENV": "test",
        "ALLOWED_HOSTS": "127.0.0.1",
        "JWT_SECRET": TEST_SECRET,
        "WORKERS": str(WORKERS),
        "TENANT_COST_PER_SECOND": str(RATE),
        "TENANT_COST_BURST": str(BURST),
        "MAX_QUERY_COST": str(BURST),
        "LOG_FORMAT": "json",
        "METRICS_PORT": "",
    }
    port = free_port()
    command = server_process.SERVER_RUN if entry == "server.py run" else server_process.uvicorn_workers(port, WORKERS)
    with server_process.running(env, port, command) as server:
        tally = busy_tenant(connections_on_each_worker(server, api.token(tenant.admin)))
    # uvicorn's own supervisor leaves its workers' table behind; the next start would remove it.
    remove_orphans(runtime_dir(), shared_buckets.PREFIX)
    by_worker = graphql_lines_by_worker(server.output())

    elapsed = tally.last_answered - tally.first_sent
    admitted, refused = tally.codes[200], tally.codes[429]
    # What one bucket can pay between the first request sent and the last answer: the burst and
    # the refill. Per-process buckets would admit up to that per worker a connection reached.
    server_bound = (BURST + RATE * elapsed) / ME_COST
    print(
        f"\n{entry}: one tenant, {PER_WORKER} kept-alive connections on each of {WORKERS} workers, {elapsed:.1f} s: "
        f"admitted {admitted} ({admitted * ME_COST / elapsed:.0f} units/s; TENANT_COST_PER_SECOND={RATE}, "
        f"burst {BURST}: at most {server_bound:.0f} requests), refused {refused} (429); "
        f"per worker served/admitted: "
        + ", ".join(f"{sum(c.values())}/{c[200]}" for c in sorted(by_worker.values(), key=lambda c: -sum(c.values())))
    )
    assert set(tally.codes) <= {200, 429}, tally.codes
    assert len(by_worker) == WORKERS and all(c[200] > 0 for c in by_worker.values()), by_worker
    assert admitted <= server_bound
    # Not refusing what it should admit either (unless the clients could not even ask that much).
    assert admitted >= min(admitted + refused, 0.5 * server_bound)


# --- a fresh checkout's first start, and a worker that dies ---------------------------------------

READY_WITHIN_SECONDS = 180.0  # two workers importing the server on a loaded machine


def workers_of(server: server_process.ServerProcess) -> list[int]:
    return [p.pid for p in descendants(server.process.pid) if "spawn_main" in p.cmdline]


def zombies_of(pid: int) -> list[int]:
    """Children of ``pid`` that have exited and were never reaped."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (seen := state(int(entry.name))) is not None and seen == (pid, "Z"):
            found.append(int(entry.name))
    return found


def readyz(server: server_process.ServerProcess) -> tuple[int, dict[str, object]]:
    try:
        response = httpx.get(f"{server.url}/readyz", timeout=5)
    except httpx.TransportError:
        return 0, {}
    return response.status_code, response.json()


def wait_for_readyz(server: server_process.ServerProcess, status: int, body: dict[str, object]) -> None:
    """Until /readyz answers ``status`` with ``body``, or the deadline: then the last answer fails the test."""
    deadline = time.monotonic() + READY_WITHIN_SECONDS
    answer = readyz(server)
    while answer != (status, body) and time.monotonic() < deadline:
        time.sleep(0.2)
        answer = readyz(server)
    assert answer == (status, body), server.output()[-3000:]


def fresh_checkout_env(tmp_path: Path) -> dict[str, str]:
    """WORKERS=2, GraphiQL on, with an asset cache of its own that starts empty (a fresh checkout's)."""
    return {
        "WORKERS": "2",
        "GRAPHIQL": "true",
        "GRAPHIQL_CACHE": str(tmp_path / "graphiql-cache"),
        "DYNAMODB_LOCAL_DATA": str(tmp_path / "dynamodb"),
        "DYNAMODB_LOCAL_PORT": str(free_port()),
        "SHUTDOWN_GRACE_SECONDS": "5",
        "DYNAMODB_ENDPOINT": "",
    }


FULL: Final = {"status": "ok", "dynamodb": True, "workers": {"serving": 2, "wanted": 2}}
SHORT: Final = {"status": "unavailable", "dynamodb": True, "workers": {"serving": 1, "wanted": 2}}


def test_run__two_workers__empty_graphiql_cache__both_serve_and_sigterm_is_prompt(tmp_path: Path) -> None:
    """Both workers of a fresh checkout's first start serve: GraphiQL's bundles are fetched once,
    before the workers start, not by both at once into one cache."""
    server = server_process.start(fresh_checkout_env(tmp_path), free_port(), timeout=READY_WITHIN_SECONDS)
    try:
        wait_for_readyz(server, 200, FULL)
        assert len(workers_of(server)) == 2 and zombies_of(server.process.pid) == []
        # Neither worker failed or was replaced on the way (the race left a traceback and a
        # replacement).
        assert "Errno 39" not in server.output() and "exited (status" not in server.output(), server.output()
        asset = httpx.get(f"{server.url}/graphiql/assets/graphiql.min.js", timeout=30)
        assert asset.status_code == 200 and len(asset.content) > 100_000
        started = time.monotonic()
        assert server.stop(signal.SIGTERM, timeout=60) == 0
        print(f"\nWORKERS=2 on an empty GraphiQL cache: SIGTERM to exit in {time.monotonic() - started:.1f} s")
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(timeout=10)
        server.close()


def test_run__two_workers__one_killed__reaped_replaced_and_readyz_says_the_pool_is_short(tmp_path: Path) -> None:
    env = fresh_checkout_env(tmp_path)
    server = server_process.start(env, free_port(), timeout=READY_WITHIN_SECONDS)
    try:
        wait_for_readyz(server, 200, FULL)
        victim, survivor = workers_of(server)
        os.kill(victim, signal.SIGKILL)

        # The survivor answers while the replacement starts: the server is short of a worker.
        wait_for_readyz(server, 503, SHORT)
        assert not Path(f"/proc/{victim}").exists()  # reaped at once, not left a zombie
        wait_for_readyz(server, 200, FULL)
        workers = workers_of(server)
        assert survivor in workers and victim not in workers and len(workers) == 2
        assert zombies_of(server.process.pid) == []
        assert f"worker {victim} exited (status -9): started worker" in server.output()
        started = time.monotonic()
        assert server.stop(signal.SIGTERM, timeout=60) == 0
        print(f"\na worker killed and replaced; SIGTERM to exit in {time.monotonic() - started:.1f} s")
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(timeout=10)
        server.close()
