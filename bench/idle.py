"""`python -m bench.idle [SETTING=VALUE ...] [--seconds S]`: what an idle bench server spends.

A product server (bench.serve) on a fresh in-memory DynamoDB Local with the bench's data,
left without requests: after 5 s of start-up, the CPU time of each of its threads over S
seconds (20 by default) from /proc/PID/task/*/schedstat, in ms per second. Its timers run
meanwhile: the change feed's reader polls the stream every FEED_POLL_SECONDS on its own
threads and renews its lease, and uvicorn ticks ten times a second on the event loop's
thread. At concurrency 1 whatever runs there may hold a request up or leave the caches cold
for it. SETTING=VALUE pairs go to the server's environment (``FEED_POLL_SECONDS=1``, say).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench.dataset import on_fresh_table
from bench.serving import Server, server_env
from datastore.dev.local import DynamoDBLocal
from graphql_api.settings import Settings


def thread_cpu_ns(pid: int) -> dict[str, int]:
    """Nanoseconds of CPU each live thread of ``pid`` has run, by thread id."""
    found: dict[str, int] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            found[tid] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except FileNotFoundError:
            continue  # ended meanwhile
    return found


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.idle")
    parser.add_argument("settings", nargs="*", metavar="SETTING=VALUE")
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    extra = dict(setting.split("=", 1) for setting in args.settings)
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        bench = on_fresh_table(base, local.endpoint_url)
        server = Server(server_env(local.endpoint_url, bench.settings.table_name, **extra), quiet=True)
        pid = server.process.pid
        try:
            time.sleep(5)
            before, started = thread_cpu_ns(pid), time.monotonic()
            time.sleep(args.seconds)
            after, elapsed = thread_cpu_ns(pid), time.monotonic() - started
        finally:
            server.stop()
    total = 0.0
    for tid, ns in sorted(after.items(), key=lambda item: item[0] != str(pid)):
        per_second = (ns - before.get(tid, 0)) / 1e6 / elapsed
        total += per_second
        if per_second >= 0.01:
            print(f"  {'event loop' if tid == str(pid) else 'thread ' + tid:14} {per_second:6.2f} ms/s")
    print(f"idle server {' '.join(args.settings) or '(bench settings)'}: {total:.2f} ms of CPU per second")


if __name__ == "__main__":
    main()
