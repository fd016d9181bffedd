"""A spawned worker dies with the process that started it (graphql_api/entrypoints/worker_process.py).

``tests/orphan_probe.py`` is a supervisor with one worker spawned as uvicorn spawns them;
killing it with SIGKILL leaves the worker nothing to clean up on, so only the kernel's
parent-death signal can end it. tests/test_server_workers.py does the same to ``server.py run``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from graphql_api.entrypoints.worker_process import die_with_parent
from graphql_api.host.files import supervisor_pid
from tests.server_process import ROOT


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, dead but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(pid)


def probe(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], int, Path]:
    pid_file = tmp_path / "worker.pid"
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "tests.orphan_probe", str(pid_file), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert supervisor.stdout is not None
    worker = int(supervisor.stdout.readline())
    supervisor.stdout.close()
    return supervisor, worker, pid_file


def test_not_a_worker__nothing_asked() -> None:
    assert supervisor_pid() is None
    assert die_with_parent() is False


def test_supervisor_killed__worker_gets_sigterm_and_exits(tmp_path: Path) -> None:
    supervisor, worker, pid_file = probe(tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().endswith("asked")):
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.05)
        assert running(worker)
        supervisor.kill()  # SIGKILL: nothing runs in the supervisor
        supervisor.wait(timeout=10)
        assert wait_gone(worker, 10), "the worker outlived its supervisor"
    finally:
        if running(worker):
            os.kill(worker, signal.SIGKILL)


def test_supervisor_gone_before_the_worker_asks__worker_exits_at_once(tmp_path: Path) -> None:
    supervisor, worker, pid_file = probe(tmp_path, "late")
    supervisor.wait(timeout=10)
    try:
        assert wait_gone(worker, 30), "a worker whose supervisor had already gone kept running"
        assert not pid_file.read_text().endswith("asked")
    finally:
        if running(worker):
            os.kill(worker, signal.SIGKILL)
