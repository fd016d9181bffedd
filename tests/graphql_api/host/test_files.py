"""Files named after their owner process (graphql_api/host/files.py): only a dead owner's are removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from graphql_api.host.files import alive, owner_tag, remove_orphans, start_time


def finished_process() -> int:
    """The pid of a process that has run and exited (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_owner_tag__running_process__pid_and_start_time() -> None:
    tag = owner_tag(os.getpid())
    assert tag == f"{os.getpid()}-{start_time(os.getpid())}"
    assert alive(tag)


def test_owner_tag__exited_process__none_and_not_alive() -> None:
    pid = finished_process()
    assert owner_tag(pid) is None
    assert not alive(f"{pid}-1")
    # The same pid started at another time is another process: a reused pid is not the owner.
    assert not alive(f"{os.getpid()}-{start_time(os.getpid())}0")


def test_remove_orphans__dead_owners_only(tmp_path: Path) -> None:
    prefix = "hr-test-"
    live = tmp_path / f"{prefix}{owner_tag(os.getpid())}-abc"
    dead_dir = tmp_path / f"{prefix}{finished_process()}-12345-xyz"
    dead_file = tmp_path / f"{prefix}{finished_process()}-12345"
    unowned = tmp_path / f"{prefix}not-a-tag"
    other = tmp_path / f"other-{finished_process()}-12345"
    live.mkdir()
    dead_dir.mkdir()
    (dead_dir / "counter_1.db").write_bytes(b"x")
    for path in (dead_file, unowned, other):
        path.write_text("x")

    removed = remove_orphans(tmp_path, prefix)

    assert sorted(removed) == sorted([dead_dir, dead_file])
    assert sorted(tmp_path.iterdir()) == sorted([live, unowned, other])
