"""The supervisor of ``server.py run``'s workers: a worker that dies is replaced at once.

uvicorn's own supervisor (``Multiprocess``) checks each worker in turn by sending it a ping
and waiting up to ``timeout_worker_healthcheck`` (30 s here: a spawned worker imports the
whole server before it can answer) for the answer. A worker that dies with a ping
unanswered is waited for the whole 30 s: meanwhile it stays a zombie, no replacement starts
and no signal is handled, so SIGTERM waits too. This one never blocks on a worker: each
turn of its loop (every 0.5 s) it reaps and replaces a worker that has exited, reads the
answer of a ping if one came, sends the next once it has, and kills a worker whose answer
is ``timeout_worker_healthcheck`` late (hung) to replace it. What it sees (workers serving,
of those wanted) goes to the pool file each worker's /readyz reads
(graphql_api/host/worker_pool.py).

A worker that fails while starting with uvicorn's STARTUP_FAILURE status (its socket, TLS or
lifespan refused) stops the server, as uvicorn's supervisor does: every replacement would
fail alike. One that dies any other way is replaced and logged; replacements of one slot are
at least RESTART_INTERVAL_SECONDS apart, so a worker that keeps dying costs a start a
second, not a busy loop.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from socket import socket
from typing import Final

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors.multiprocess import Multiprocess, Process

from graphql_api.host.worker_pool import PoolState, publish

log = logging.getLogger("hr.workers")

RESTART_INTERVAL_SECONDS: Final = 1.0


class Supervisor(Multiprocess):
    """uvicorn's multiprocess supervisor, with a health check that never waits on a worker."""

    def __init__(self, config: Config, sockets: list[socket], pool_file: Path | None) -> None:
        super().__init__(config, sockets)
        self.pool_file = pool_file
        # By worker pid: when its unanswered ping was sent, and whether its server has started.
        self._pinged: dict[int, float] = {}
        self._serving: dict[int, bool] = {}
        self._restarted: dict[int, float] = {}
        self._published: PoolState | None = None
        self._was_full = False  # every worker wanted has served at once
        self._publish()

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        for slot, process in enumerate(self.processes):
            replacement = self._check(slot, process)
            if self.should_exit.is_set():
                return
            if replacement is not None:
                self.processes[slot] = replacement
        self._publish()

    def _check(self, slot: int, process: Process) -> Process | None:
        """A new worker in place of ``process`` when it has exited or hangs; else None."""
        pid = process.pid
        assert pid is not None
        now = time.monotonic()
        if process.process.is_alive():  # waitpid: a worker that exited is reaped here
            try:
                if pid in self._pinged and process.parent_conn.poll():
                    self._serving[pid] = bool(process.parent_conn.recv())
                    del self._pinged[pid]
                if pid not in self._pinged:
                    process.parent_conn.send(b"ping")
                    self._pinged[pid] = now
                    return None
            except (OSError, EOFError, ValueError):
                pass  # its end of the pipe is gone: it is on its way out
            else:
                if now - self._pinged[pid] < self.config.timeout_worker_healthcheck:
                    return None
                log.error("worker %d did not answer for %.0f s: killed", pid, now - self._pinged[pid])
        if now - self._restarted.get(slot, -RESTART_INTERVAL_SECONDS) < RESTART_INTERVAL_SECONDS:
            return None  # replaced a moment ago: the next turn replaces it
        process.kill()
        process.join()
        self._forget(pid)
        if process.exitcode == STARTUP_FAILURE:
            log.error("worker %d failed to start (status %d): stopping the server", pid, STARTUP_FAILURE)
            self.should_exit.set()
            return None
        replacement = Process(self.config, self.sockets)
        replacement.start()
        self._restarted[slot] = now
        status = process.exitcode
        log.warning("worker %d exited (status %s): started worker %s in its place", pid, status, replacement.pid)
        return replacement

    def _forget(self, pid: int) -> None:
        self._pinged.pop(pid, None)
        self._serving.pop(pid, None)

    def _publish(self) -> None:
        serving = sum(1 for process in self.processes if self._serving.get(process.pid or 0, False))
        state = PoolState(serving, self.processes_num)
        if state == self._published:
            return
        if state.short and self._was_full:
            log.warning("%d of %d workers serving: /readyz answers 503 until all are", state.serving, state.wanted)
        elif not state.short:
            if self._was_full:
                log.info("all %d workers serving again", state.wanted)
            self._was_full = True
        if self.pool_file is not None:
            publish(self.pool_file, state)
        self._published = state


def supervise(config: Config, pool_file: Path | None) -> None:
    """Serve ``config.app`` (an import path) in ``config.workers`` workers until a signal stops them.

    What ``uvicorn.run`` does with ``workers`` above 1, with this supervisor in place of uvicorn's.
    """
    Supervisor(config, [config.bind_socket()], pool_file).run()
