"""A worker process of a multi-process server: who started it, and dying when that process dies.

``server.py run`` with WORKERS=N and ``uvicorn graphql_api.entrypoints.asgi:app --workers N`` both run
uvicorn's supervisor, which starts each worker with multiprocessing's spawn; in a worker,
``multiprocessing.parent_process()`` is that supervisor, and in any other process (one
server process, Lambda, a test) it is None.

A worker outlives a supervisor killed outright (``kill -9``, the OOM killer): nothing tells
it, it keeps the listening socket, ``/healthz`` keeps answering 200 and the next start finds
the port taken. So each worker asks the kernel for SIGTERM when its parent dies (Linux's
``prctl(PR_SET_PDEATHSIG)``), which uvicorn handles as a graceful stop: the socket is closed
at once, requests in flight get the shutdown grace, and the process exits. The signal comes
when the thread that started the worker ends; uvicorn's supervisor starts and restarts
workers on its main thread, which ends only with the process. If the supervisor died before
the worker asked (a worker starts in about a second), the worker sees it has been handed to
another parent and exits at once.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Final

from graphql_api.host.files import supervisor_pid

# prctl(2) option: the signal this process gets when its parent dies.
_PR_SET_PDEATHSIG: Final = 1


def die_with_parent() -> bool:
    """In a spawned worker on Linux, have the kernel send SIGTERM when the supervisor dies.

    Returns whether it was asked for. Exits at once if the supervisor is already gone.
    """
    supervisor = supervisor_pid()
    if supervisor is None or sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_PDEATHSIG): {os.strerror(error)}")
    if os.getppid() != supervisor:
        raise SystemExit("the server process that started this worker has exited")
    return True
