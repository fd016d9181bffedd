"""Files a server keeps on its host while it runs, named after the process that owns them.

The metrics directory of ``server.py run`` (prometheus-client's multiprocess files) and the
tenant buckets its workers share (graphql_api/limits/shared_buckets.py) outlive their owner when it is
killed outright (``kill -9``, the OOM killer): nothing runs to remove them. Each is named
after its owner, by pid and start time (a pid alone is reused), so a later start removes
those whose owner is gone, and never one a running server still uses, whatever release or
checkout made it. Linux only (the start time comes from /proc); elsewhere nothing is named
after an owner and nothing is removed.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Final

PROC: Final = Path("/proc")
# Shared memory on Linux: a tmpfs, so a mapped file there is never written to a disk.
SHARED_MEMORY: Final = Path("/dev/shm")
_OWNER: Final = re.compile(r"(\d+)-(\d+)(?:-|$)")


def supervisor_pid() -> int | None:
    """The pid of the process that spawned this worker (graphql_api/entrypoints/worker_process.py);
    None when this is not a spawned worker. A worker's host files are named after it: they are
    its server's, shared by its workers."""
    parent = multiprocessing.parent_process()
    return None if parent is None else parent.pid


def start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (/proc/PID/stat field 22); None if it is gone."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold anything but ends at the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])


def owner_tag(pid: int) -> str | None:
    """``PID-STARTTIME`` for a process that is running, or None (gone, or not Linux)."""
    started = start_time(pid)
    return None if started is None else f"{pid}-{started}"


def alive(tag: str) -> bool:
    """Whether the process ``tag`` names (``PID-STARTTIME``) is still the one running."""
    match = _OWNER.match(tag)
    if match is None:
        return True  # not ours to judge
    pid, started = int(match[1]), int(match[2])
    return start_time(pid) == started


def runtime_dir() -> Path:
    """Where such files go: shared memory when the host has it, else the temporary directory."""
    if SHARED_MEMORY.is_dir() and os.access(SHARED_MEMORY, os.W_OK):
        return SHARED_MEMORY
    return Path(tempfile.gettempdir())


def remove_orphans(directory: Path, prefix: str) -> list[Path]:
    """Remove the files and directories ``prefix`` + owner tag in ``directory`` whose owner is gone."""
    removed = []
    for path in _entries(directory, prefix):
        tag = path.name[len(prefix) :]
        if _OWNER.match(tag) is not None and not alive(tag):
            remove(path)
            removed.append(path)
    return removed


def remove(path: Path) -> None:
    """Remove a file or a directory tree; one already gone, or not ours to remove, is left."""
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _entries(directory: Path, prefix: str) -> list[Path]:
    try:
        return sorted(directory.glob(f"{prefix}*"))
    except OSError:
        return []
