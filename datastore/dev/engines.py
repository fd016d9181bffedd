"""Engines of any release already running on a data directory, found from ``/proc``.

The data-directory lock (datastore/dev/local.py) keeps two engines of this release apart, but an
engine started by an earlier release, or by hand, never took it: starting a second engine on
the files such an engine has open would have two SQLite writers on one database. So before
an engine starts, every process the user may inspect is looked at for either sign:

- a command line with ``-dbPath`` naming the directory (DynamoDB Local's own option,
  relative paths taken from the process's working directory);
- an open file inside the directory whose name ends in ``.db`` (DynamoDB Local's SQLite
  file, ``shared-local-instance.db`` with ``-sharedDb``, open from its first request on).

Linux only (``/proc``); elsewhere nothing is found, and only the lock protects the data.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Final

PROC: Final = Path("/proc")
DB_PATH_OPTION: Final = "-dbPath"
DATABASE_SUFFIX: Final = ".db"


def _same_directory(candidate: Path, data_dir: Path) -> bool:
    try:
        return candidate.resolve() == data_dir
    except OSError:
        return False


def _names_directory(process: Path, data_dir: Path) -> bool:
    """Its command line has ``-dbPath <data_dir>``."""
    arguments = (process / "cmdline").read_bytes().split(b"\0")
    for option, value in pairwise(arguments):
        if option.decode(errors="replace") != DB_PATH_OPTION:
            continue
        path = Path(os.fsdecode(value))
        if not path.is_absolute():
            path = Path(os.readlink(process / "cwd")) / path
        if _same_directory(path, data_dir):
            return True
    return False


def _holds_database(process: Path, data_dir: Path) -> bool:
    """It has a ``.db`` file inside ``data_dir`` open."""
    descriptors = process / "fd"
    for descriptor in os.listdir(descriptors):
        try:
            target = Path(os.readlink(descriptors / descriptor))
        except OSError:
            continue  # closed while we looked
        if target.suffix == DATABASE_SUFFIX and target.parent == data_dir:
            return True
    return False


def _processes() -> Iterator[Path]:
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return
    yield from (entry for entry in entries if entry.name.isdigit())


def engines_on(data_dir: Path, *, ignore: frozenset[int] = frozenset()) -> list[int]:
    """The pids of processes (other than this one and ``ignore``) running on ``data_dir``."""
    wanted = data_dir.resolve()
    found = []
    for process in _processes():
        pid = int(process.name)
        if pid == os.getpid() or pid in ignore:
            continue
        try:
            if _names_directory(process, wanted) or _holds_database(process, wanted):
                found.append(pid)
        except OSError:
            continue  # exited while we looked, or another user's process we may not inspect
    return sorted(found)
