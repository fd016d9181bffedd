"""The graphql-ws client (npm's, on Node's ws) with its default retries, as a process a test reads line by line.

``live.mjs`` (tests/graphql_api/frontend/graphql_ws/) subscribes with one payload, exactly as
given, and prints every frame, every socket event (connecting, connected, closed with its
code and reason) and every result as a JSON line; ``LiveClient`` reads them as they come.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.graphql_api.frontend.tools import GRAPHQL_WS, graphql_ws_modules

NODE = shutil.which("node")


def node_work(folder: Path) -> Path:
    """``folder`` set up to run live.mjs: the pinned node_modules linked in."""
    assert NODE is not None, "node is needed for the graphql-ws client tests; install Node.js and npm"
    (folder / "node_modules").symlink_to(graphql_ws_modules(), target_is_directory=True)
    shutil.copy(GRAPHQL_WS / "live.mjs", folder / "live.mjs")
    return folder


class LiveClient:
    """One ``node live.mjs`` process; its lines are collected by a thread as they come."""

    def __init__(self, work: Path, base_url: str, payload: dict[str, Any], events: int, **credential: str) -> None:
        assert NODE is not None
        url = base_url.replace("http://", "ws://") + "/graphql"
        config = {"url": url, "payload": payload, "events": events, **credential}
        self.process = subprocess.Popen(
            [NODE, "live.mjs", json.dumps(config)], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            with self._lock:
                self.lines.append(json.loads(raw))

    def seen(self, key: str) -> list[dict[str, Any]]:
        with self._lock:
            return [line for line in self.lines if key in line]

    def until(self, key: str, seconds: float = 30, count: int = 1) -> list[dict[str, Any]]:
        """Wait until ``count`` lines hold ``key``; those lines."""
        deadline = time.monotonic() + seconds
        while len(found := self.seen(key)) < count:
            if time.monotonic() > deadline or (self.process.poll() is not None and not self._reader.is_alive()):
                raise AssertionError(f"no {count} {key!r} lines from the client: {self.lines} {self.stderr()}")
            time.sleep(0.05)
        return found

    def until_disposed(self, seconds: float = 10) -> None:
        """Wait for the close of the client's own dispose (1000), which follows its events line."""
        deadline = time.monotonic() + seconds
        while not any(code == 1000 for code, _reason in self.closes()):
            if time.monotonic() > deadline:
                raise AssertionError(f"the client did not close its socket: {self.lines} {self.stderr()}")
            time.sleep(0.05)

    def closes(self) -> list[tuple[int, str]]:
        return [(line["closed"], line["reason"]) for line in self.seen("closed")]

    def results(self) -> list[dict[str, Any]]:
        return [line["next"] for line in self.seen("next")]

    def sent(self) -> list[dict[str, Any]]:
        return [line["frame"] for line in self.seen("frame") if line["dir"] == "out"]

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read() if self.process.poll() is not None else ""

    def close(self) -> None:
        self.process.kill()
        self.process.communicate(timeout=10)
        self._reader.join(timeout=10)
