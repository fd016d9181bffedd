"""The directory where a multi-process server's workers write their metrics, and its leftovers.

prometheus-client's multiprocess mode keeps each worker's figures in files (``counter_PID.db``,
...) in one directory that ``/metrics`` sums; ``server.py run`` makes a fresh one per run and
removes it at exit. A server killed outright leaves it behind, so each start first removes
those whose owner is gone (graphql_api/host/files.py): directories named after their owner,
and those of earlier releases, named ``hr-metrics-XXXXXXXX`` after nobody, once no process a
file in them names is running and they have not changed for a minute (a running server's
workers are running, and a new directory changes as they start).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path
from typing import Final

from graphql_api.host.files import owner_tag, remove, remove_orphans, start_time

PREFIX: Final = "hr-metrics-"
# mkdtemp's eight characters after the prefix: a directory of a release before owner tags.
_UNOWNED: Final = re.compile(r"[a-z0-9_]{8}")
# prometheus-client names a process's files after its pid: ``histogram_1234.db``.
_WRITER: Final = re.compile(r"_(\d+)\.db$")
UNOWNED_QUIET_SECONDS: Final = 60.0


def create() -> str:
    """A fresh directory in the temporary directory, named after this process."""
    tag = owner_tag(os.getpid())
    return tempfile.mkdtemp(prefix=f"{PREFIX}{tag}-" if tag is not None else PREFIX)


def remove_leftovers(directory: Path | None = None) -> list[Path]:
    """Remove the metrics directories no running server uses; returns those removed."""
    where = Path(tempfile.gettempdir()) if directory is None else directory
    removed = remove_orphans(where, PREFIX)
    now = time.time()
    for path in sorted(where.glob(f"{PREFIX}*")):
        if _UNOWNED.fullmatch(path.name[len(PREFIX) :]) and _abandoned(path, now):
            remove(path)
            removed.append(path)
    return removed


def _abandoned(path: Path, now: float) -> bool:
    try:
        if not path.is_dir() or now - path.stat().st_mtime < UNOWNED_QUIET_SECONDS:
            return False
        writers = {int(found[1]) for file in path.iterdir() if (found := _WRITER.search(file.name))}
    except OSError:
        return False
    return all(start_time(pid) is None for pid in writers)
