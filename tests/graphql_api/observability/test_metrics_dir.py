"""The metrics directory of a multi-process server and the leftovers of killed ones
(graphql_api/observability/metrics_dir.py); tests/test_server_workers.py shows it on a real server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphql_api.host.files import owner_tag
from graphql_api.observability import metrics_dir


def finished_process() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def aged(path: Path, seconds: float) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


def test_create__named_after_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    created = Path(metrics_dir.create())
    assert created.parent == tmp_path
    assert created.name.startswith(f"hr-metrics-{owner_tag(os.getpid())}-")
    assert metrics_dir.remove_leftovers(tmp_path) == []  # its owner runs
    assert created.is_dir()


def test_remove_leftovers__a_killed_servers_directory__removed(tmp_path: Path) -> None:
    killed = tmp_path / f"hr-metrics-{finished_process()}-4242-a1b2c3d4"
    killed.mkdir()
    (killed / "counter_77.db").write_bytes(b"x")
    assert metrics_dir.remove_leftovers(tmp_path) == [killed]
    assert not killed.exists()


def test_remove_leftovers__an_earlier_releases_directory__removed_once_abandoned(tmp_path: Path) -> None:
    """``hr-metrics-XXXXXXXX`` names no owner: judged by the processes its files name, and its age."""
    dead_writer = finished_process()
    abandoned = tmp_path / "hr-metrics-k3j2h1g0"
    abandoned.mkdir()
    (abandoned / f"histogram_{dead_writer}.db").write_bytes(b"x")
    recent = tmp_path / "hr-metrics-q9w8e7r6"
    recent.mkdir()  # a server of that release still starting: no files yet
    working = tmp_path / "hr-metrics-z1x2c3v4"
    working.mkdir()
    (working / f"counter_{os.getpid()}.db").write_bytes(b"x")  # a worker that runs
    for path in (abandoned, working):
        aged(path, 2 * metrics_dir.UNOWNED_QUIET_SECONDS)

    assert metrics_dir.remove_leftovers(tmp_path) == [abandoned]
    assert sorted(tmp_path.iterdir()) == sorted([recent, working])
