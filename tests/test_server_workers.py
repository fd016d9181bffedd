"""``server.py run`` with WORKERS=2 as an operator runs it: killed outright.

Killed with SIGKILL, the server runs no cleanup; its workers, multiprocessing's resource
tracker and the embedded DynamoDB Local must all end anyway (graphql_api/worker_process.py,
datastore/local.py), leaving the port free for a server started at once on the same port and
data, which also removes the metrics directory the killed one left.

"""

from __future__ import annotations

import collections
import os
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from datastore.local import free_port
from tests import server_process

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

        server.process.kill()  # SIGKILL: the server runs no cleanup at all
        server.process.wait(timeout=10)

        deadline = time.monotonic() + GONE_WITHIN_SECONDS
        while any(running(p.pid) for p in family) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in family if running(p.pid)] == []
        server.close()
        assert port_free(port)
        assert left.is_dir()  # left behind, as nothing ran

        started = time.monotonic()
        again = server_process.start(env, port)
        took = time.monotonic() - started
        try:
            assert httpx.get(f"{again.url}/healthz").json() == {"status": "ok"}
        finally:
            assert again.stop(signal.SIGTERM) == 0
        print(f"\nevery process of the killed server gone, the same port and data served again in {took:.1f} s")
        assert f"removed {left}, left by a server that was killed" in again.output()
        assert not left.exists()
    finally:
        for process in family:
            if running(process.pid):
                os.kill(process.pid, signal.SIGKILL)
        if server.process.poll() is None:
            server.process.kill()
        server.process.wait(timeout=10)
        server.close()
