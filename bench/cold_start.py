"""The cold-start lane: spawn to the first answered Q3, for ``server.py`` and for the floor.

``server.py`` is spawned in serving mode on a table that already exists, holds the data and is
at this release's layout (a first, untimed run of each makes sure of it, and warms the disk
cache for both), and the lane times from the spawn to the first answered Q3, the median of
``runs``. Beside it the floor: a bare Starlette app on uvicorn answering one JSON route
(bench/bare_app.py), timed the same way; and the stack's floor: that app after importing the
libraries the product serves with and none of its code (bench/stack_app.py), which splits the
product's start into what the stack costs any service built on it and what the product's own
modules, schema and first request add. The runs alternate, so that what drifts on a shared
machine reaches all alike. Also the server's resident set (VmRSS) right after its first answer.

Both are timed as deployed, with their bytecode compiled: before the first run the lane
writes the .pyc of the product's packages (the zip's: deploy/package.py's ``PACKAGES``) and of
the floor's modules, as ``make`` installs the venv's (``uv pip sync --compile-bytecode``) and
``make package`` ships the zip's. Where PYTHONDONTWRITEBYTECODE is set nothing else would
write them, and every start would compile every module from source. They are timestamp
.pyc files, which Python recompiles from an edited source, as a working tree needs.
``server.py`` itself, run as a script, is compiled from source at each start, as it is
wherever it runs.

``python -m bench.cold_start`` runs the lane alone on a fresh DynamoDB Local with the bench's
dataset and writes its three figures into bench/results/latest.json (the rest kept); ``make
bench`` runs it after the query tables (bench/__main__.py).
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.dataset import on_fresh_table
from bench.figures import RESULTS
from bench.queries import Q3
from bench.serving import API, server_env
from bench.warmup import cpu_ticks
from datastore.dev.local import free_port
from deploy.package import PACKAGES

ROOT = Path(__file__).resolve().parent.parent
# How often a starting process is asked again: a refused connection costs both sides almost nothing.
POLL_SECONDS = 0.005
START_DEADLINE_SECONDS = 60.0
RUNS = 5
# The stack's floor: the bare app after the product's libraries (bench/stack_app.py).
STACK_APP = "bench.stack_app"


@dataclass(frozen=True, slots=True)
class FirstAnswer:
    seconds: float  # spawn to the first answer
    rss_mb: float  # the process's resident set right after it
    cpu_ms: float  # the process's CPU time until then: on a shared machine, steadier than the wall time
    body: dict[str, Any]


def resident_mb(pid: int) -> float:
    """The process's resident set now (VmRSS), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/<pid>/status")


def first_answer(args: list[str], env: dict[str, str], url: str, body: bytes, headers: dict[str, str]) -> FirstAnswer:
    """Spawn ``args`` and post ``body`` to ``url`` until it answers; the process is stopped after."""
    with tempfile.TemporaryFile() as stderr, httpx.Client(timeout=START_DEADLINE_SECONDS) as http:
        started = time.perf_counter()
        process = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            while time.perf_counter() - started < START_DEADLINE_SECONDS:
                if process.poll() is not None:
                    stderr.seek(0)
                    tail = stderr.read().decode(errors="replace").strip().splitlines()[-5:]
                    raise RuntimeError(f"{args[1]} exited ({process.returncode}) before answering: {tail}")
                try:
                    response = http.post(url, content=body, headers=headers)
                except httpx.TransportError:
                    time.sleep(POLL_SECONDS)
                    continue
                seconds = time.perf_counter() - started
                rss = resident_mb(process.pid)
                cpu = cpu_ticks(Path(f"/proc/{process.pid}/stat")) * 1000 / os.sysconf("SC_CLK_TCK")
                answer: dict[str, Any] = orjson.loads(response.content)
                if response.status_code != 200 or "errors" in answer:
                    raise RuntimeError(f"{args[1]}'s first answer is an error: {response.status_code} {answer}")
                return FirstAnswer(seconds, rss, cpu, answer)
            raise RuntimeError(f"{args[1]} did not answer within {START_DEADLINE_SECONDS:g}s")
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def product_run(env: dict[str, str], token: str, port: int) -> FirstAnswer:
    """``server.py run`` (one worker) on ``env``'s table, to its first answered Q3."""
    return first_answer(
        [sys.executable, "server.py", "run"],
        {**env, "PORT": str(port), "WORKERS": "1"},
        f"http://127.0.0.1:{port}/graphql",
        orjson.dumps({"query": Q3}),
        {"Authorization": f"Bearer {token}", "content-type": "application/json"},
    )


def floor_run(env: dict[str, str], port: int, module: str = "bench.bare_app") -> FirstAnswer:
    """The floor's app (``module``: bench.bare_app, or bench.stack_app for the stack's) to its first answer."""
    return first_answer(
        [sys.executable, "-m", module, str(port)],
        env,
        f"http://127.0.0.1:{port}/",
        b"{}",
        {"content-type": "application/json"},
    )


def compile_as_deployed() -> None:
    """Write the bytecode of the product's packages and of the floors' modules (those of
    ``-m bench.bare_app`` and ``-m bench.stack_app``) where missing or stale, as a deployment
    ships it."""
    compiled = all([compileall.compile_dir(ROOT / package, quiet=1) for package in PACKAGES])
    for module in ("__init__.py", "bare_app.py", "stack_app.py"):
        compiled = compileall.compile_file(ROOT / "bench" / module, quiet=1) and compiled
    if not compiled:
        raise RuntimeError("a module of the product or of the floor does not compile (compileall's output above)")


def measure(env: dict[str, str], token: str, runs: int = RUNS) -> dict[str, float]:
    """The lane's figures: ``env`` is a bench server's (bench.serving.server_env) on a table
    with data that ``token``'s caller can run Q3 on."""
    compile_as_deployed()
    # Untimed: the first start of a table may stamp its layout or turn its stream on, and the
    # first spawn of each reads its modules from disk.
    product_run(env, token, free_port())
    floor_run(env, free_port())
    floor_run(env, free_port(), STACK_APP)
    product: list[FirstAnswer] = []
    floor: list[FirstAnswer] = []
    stack: list[FirstAnswer] = []
    for _ in range(runs):
        product.append(product_run(env, token, free_port()))
        floor.append(floor_run(env, free_port()))
        stack.append(floor_run(env, free_port(), STACK_APP))
    return {
        "cold_start_ms": round(statistics.median(a.seconds for a in product) * 1000, 1),
        "cold_start_floor_ms": round(statistics.median(a.seconds for a in floor) * 1000, 1),
        "rss_first_answer_mb": round(statistics.median(a.rss_mb for a in product), 1),
        "rss_first_answer_floor_mb": round(statistics.median(a.rss_mb for a in floor), 1),
        "cold_start_cpu_ms": round(statistics.median(a.cpu_ms for a in product), 1),
        "cold_start_floor_cpu_ms": round(statistics.median(a.cpu_ms for a in floor), 1),
        "cold_start_stack_ms": round(statistics.median(a.seconds for a in stack) * 1000, 1),
        "cold_start_stack_cpu_ms": round(statistics.median(a.cpu_ms for a in stack), 1),
    }


def row(figures: dict[str, float]) -> dict[str, dict[str, Any]]:
    """The figures as a row of bench/targets.py's: the product's and the floor's."""
    return {
        "product": {"cold_start_ms": figures["cold_start_ms"], "rss_mb": figures["rss_first_answer_mb"]},
        "floor": {"cold_start_ms": figures["cold_start_floor_ms"], "rss_mb": figures["rss_first_answer_floor_mb"]},
    }


def print_figures(figures: dict[str, float]) -> None:
    product, floor = figures["cold_start_ms"], figures["cold_start_floor_ms"]
    print(f"\ncold start: spawn to the first answered Q3, median of {RUNS} (floor: a bare Starlette app on uvicorn)")
    cpu, floor_cpu = figures["cold_start_cpu_ms"], figures["cold_start_floor_cpu_ms"]
    print(f"{'':10}{'ms':>10}{'cpu_ms':>10}{'rss_mb':>10}")
    print(f"{'product':10}{product:>10}{cpu:>10}{figures['rss_first_answer_mb']:>10}")
    print(f"{'floor':10}{floor:>10}{floor_cpu:>10}{figures['rss_first_answer_floor_mb']:>10}")
    stack, stack_cpu = figures["cold_start_stack_ms"], figures["cold_start_stack_cpu_ms"]
    print(f"{'stack':10}{stack:>10}{stack_cpu:>10}{'':>10}  (the floor after the product's libraries)")
    print(f"{'prod/floor':10}{f'{product / floor:.2f}x':>10}{f'{cpu / floor_cpu:.2f}x':>10}")
    print(f"{'stack/floor':10}{f'{stack / floor:.2f}x':>10}{f'{stack_cpu / floor_cpu:.2f}x':>10}")


def main() -> int:
    from datastore.dev.local import DynamoDBLocal
    from graphql_api.auth.tokens import issue_token
    from graphql_api.settings import Settings

    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        table = on_fresh_table(base, local.endpoint_url)
        profile = table.data.profile
        token = issue_token(API, subject=profile.emp_id, org_id=profile.org_id, role=profile.role.value)
        figures = measure(server_env(local.endpoint_url, table.settings.table_name), token)
    print_figures(figures)
    previous = orjson.loads(RESULTS.read_bytes()) if RESULTS.exists() else {}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_bytes(orjson.dumps({**previous, **figures}, option=orjson.OPT_INDENT_2))
    print(f"\nwrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
