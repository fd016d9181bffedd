"""A supervisor with one spawned worker, as uvicorn's is, for tests/graphql_api/entrypoints/test_worker_process.py.

``python -m tests.orphan_probe PIDFILE [late]`` starts a worker with multiprocessing's spawn
that calls ``die_with_parent`` and writes its pid to PIDFILE, then sleeps; this process
prints the worker's pid and waits to be killed. With ``late``, this process exits at once and
the worker asks only a second later, when it already has another parent.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from pathlib import Path

from graphql_api.entrypoints.worker_process import die_with_parent


def worker(pid_file: str, delay: float) -> None:
    time.sleep(delay)
    Path(pid_file).write_text(str(os.getpid()))  # before asking: the test watches this pid
    die_with_parent()
    Path(pid_file).write_text(f"{os.getpid()} asked")
    time.sleep(600)


def main() -> None:
    pid_file, late = sys.argv[1], "late" in sys.argv[2:]
    process = multiprocessing.get_context("spawn").Process(target=worker, args=(pid_file, 1.0 if late else 0.0))
    process.start()
    print(process.pid, flush=True)
    if late:
        os._exit(0)  # gone before the worker asks, and without waiting for it
    time.sleep(600)


if __name__ == "__main__":
    main()
