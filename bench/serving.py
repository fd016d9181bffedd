"""The bench's servers: what they sign tokens with, their environment, a spawned ``bench.serve``
process, and the CPU and peak resident set read off a running one from ``/proc``.

Shared by ``python -m bench`` and the lanes of their own (cold start, wake, fairness, webhooks...),
which spawn their servers the same way and issue their clients' tokens with the same ``API``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.warmup import cpu_ticks
from datastore.dev.local import free_port
from graphql_api.settings import child_environment
from graphql_api.settings.api import ApiSettings

SECRET = "bench-secret-0123456789-0123456789-abcdef"
# What the bench servers sign and check tokens with: issue_token(API, ...) for the clients.
API = ApiSettings.from_env({"HR_ENV": "bench", "JWT_SECRET": SECRET})


def server_env(endpoint_url: str, table_name: str, **settings: str) -> dict[str, str]:
    """The environment of a bench server (bench.serve) on ``table_name``, plus ``settings``."""
    return child_environment(
        {
            "DYNAMODB_ENDPOINT": endpoint_url,
            "HR_TABLE_NAME": table_name,
            "HR_ENV": "bench",
            "ALLOWED_HOSTS": "127.0.0.1",
            "JWT_SECRET": SECRET,
            "PYTHONPATH": os.getcwd(),
            **settings,
        }
    )


class Server:
    def __init__(self, env: dict[str, str], *flags: str, quiet: bool = False) -> None:
        """``quiet``: its standard output (the workers' access log, a line per request) dropped."""
        self.port = free_port()
        args = [sys.executable, "-m", "bench.serve", str(self.port), *flags]
        self.process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL if quiet else None)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("bench server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/<pid>/status")


def cpu_seconds(pid: int) -> float:
    return cpu_ticks(Path(f"/proc/{pid}/stat")) / os.sysconf("SC_CLK_TCK")
