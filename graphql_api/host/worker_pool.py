"""How many of a server's workers are serving, as its supervisor last saw: for /readyz.

``server.py run`` with WORKERS=N supervises its workers itself (graphql_api/entrypoints/supervisor.py)
and writes what it sees to a small file on the host (graphql_api/host/files.py), named after
the supervisor by pid and start time, so each worker finds its own supervisor's without
anything handed down. A worker's /readyz reads it (graphql_api/http/health.py): a pool short of a
worker (one died and its replacement is not serving yet, or keeps failing to start) is not
ready, although the worker answering is. The file is replaced whole (written aside, then
renamed), so a reader never sees half of it; one left by a killed server is removed at the
next start. Under uvicorn's own supervisor (``uvicorn ... --workers N``) there is no file,
and /readyz says nothing about the pool.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from graphql_api.host.files import owner_tag, runtime_dir, supervisor_pid

PREFIX: Final = "hr-worker-pool-"


@dataclass(frozen=True, slots=True)
class PoolState:
    """Workers answering the supervisor that their server has started, of those it keeps."""

    serving: int
    wanted: int

    @property
    def short(self) -> bool:
        return self.serving < self.wanted


def path_of(pid: int) -> Path | None:
    """The file of supervisor ``pid``; None when it is gone (or the host is not Linux)."""
    tag = owner_tag(pid)
    return None if tag is None else runtime_dir() / f"{PREFIX}{tag}"


def publish(path: Path, state: PoolState) -> None:
    """Replace the file at ``path`` with ``state``, whole."""
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    aside.write_text(json.dumps({"serving": state.serving, "wanted": state.wanted}))
    aside.replace(path)


def read(path: Path) -> PoolState | None:
    """The state at ``path``; None when there is none (yet) or it is not ours to read."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        found = json.loads(path.read_text())
        return PoolState(int(found["serving"]), int(found["wanted"]))
    return None


def reader(path: Path | None) -> Callable[[], PoolState | None]:
    """What /readyz calls for the pool's state: the file at ``path`` read afresh, or None without one."""
    return (lambda: None) if path is None else functools.partial(read, path)


def my_pool() -> Path | None:
    """In a worker of ``server.py run``, its supervisor's file; None in any other process."""
    supervisor = supervisor_pid()
    return None if supervisor is None else path_of(supervisor)
