"""``python server.py run`` (or another server command) as a real process, its output collected as it runs.

For tests that need the server as an operator runs it (its own process, its workers, its
protocol) rather than an app served in the test's process (tests/graphql_api/live.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_SECONDS = 90.0
SERVER_RUN = ("server.py", "run")


def uvicorn_workers(port: int, workers: int) -> tuple[str, ...]:
    """The production command line (README "Two commands"): uvicorn's own supervisor and workers."""
    return (
        "-m",
        "uvicorn",
        "graphql_api.entrypoints.asgi:app",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--http",
        "graphql_api.entrypoints.worker_protocol:Protocol",
        "--ws",
        "graphql_api.entrypoints.websocket_protocol:GoingAwayProtocol",
        "--ws-max-size",
        "32768",
        "--no-access-log",
    )


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    port: int
    lines: list[str] = field(default_factory=list)
    collector: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return "".join(self.lines)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 60) -> int:
        """Send ``sig`` (unless it has exited), wait for the exit, and keep the rest of the output."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout)
        self.close()
        return code

    def close(self) -> None:
        """Once the process has exited: the rest of its output read, the pipe closed.

        Processes it left running (a test's failure) may hold the pipe open: then the pipe is
        left to the collector, since closing it under a blocked read would block too.
        """
        if self.collector is not None:
            self.collector.join(timeout=30)  # its workers may hold the pipe a moment longer
            if self.collector.is_alive():
                return
        if self.process.stdout is not None and not self.process.stdout.closed:
            self.process.stdout.close()


def start(
    env: Mapping[str, str], port: int, *, command: Sequence[str] = SERVER_RUN, timeout: float = START_TIMEOUT_SECONDS
) -> ServerProcess:
    """``python *command`` with ``env`` (over this process's environment) on ``port``, once /healthz answers."""
    process = subprocess.Popen(
        [sys.executable, *command],
        cwd=ROOT,
        env={**os.environ, **env, "PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    server = ServerProcess(process, port)

    def collect() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            server.lines.append(line)

    server.collector = threading.Thread(target=collect, name=f"server-{port}-output", daemon=True)
    server.collector.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            server.close()
            raise AssertionError(f"the server exited at start ({process.returncode}): {server.output()}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.kill()
    process.wait()
    server.close()
    raise AssertionError(f"the server did not answer within {timeout} s: {server.output()}")


@contextmanager
def running(env: Mapping[str, str], port: int, command: Sequence[str] = SERVER_RUN) -> Iterator[ServerProcess]:
    """``start``, and stopped (SIGTERM, then SIGKILL) when the block ends."""
    server = start(env, port, command=command)
    try:
        yield server
    finally:
        try:
            server.stop(signal.SIGTERM, timeout=30)
        except subprocess.TimeoutExpired:
            server.stop(signal.SIGKILL)
