"""`python -m bench.explain [BASELINE_DIR]`: what EXPLAIN costs a Q1 that does not ask for it.

The bench dataset on a fresh DynamoDB Local, shared by every run. Each run is a process of
its own on one checkout, with the app driven in-process through httpx's ASGI transport (no
sockets), so ``time.process_time`` around N requests is the server's CPU for Q1 (DynamoDB
Local runs in its own process). The runs alternate: this checkout with explain off, the
baseline checkout (default: a worktree of ``main``'s merge base with HEAD, the code before
EXPLAIN), then again, so the spread between runs of one side is the noise to compare with.
Last, this checkout's Q1 with ``extensions.explain``, for what asking costs.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.in_process import in_process

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 30
RUNS = 3

# Run in the checkout under test (its own imports): server CPU ms per Q1 request.
CHILD = r"""
import asyncio, json, sys, time
from dataclasses import replace
import httpx
from bench.queries import Q1
from datastore.table.store import Datastore
from graphql_api.app import create_app
from graphql_api.settings import Settings
from graphql_api.settings.api import ApiSettings

endpoint, table, token, env, rounds, explain = sys.argv[1:7]
settings = replace(Settings.load().datastore, endpoint_url=endpoint, table_name=table)
datastore = Datastore.connect(settings)  # the same call before and after the datastore became async
app = create_app(datastore, ApiSettings.from_env(json.loads(env)))
body = {"query": Q1, **({"extensions": {"explain": True}} if explain == "1" else {})}

async def main():
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
            for _ in range(5):  # warm: documents cached, connections open
                answer = (await http.post("/graphql", json=body, headers=headers)).json()
                assert "errors" not in answer, answer
            started = time.process_time()
            for _ in range(int(rounds)):
                assert (await http.post("/graphql", json=body, headers=headers)).status_code == 200
            return (time.process_time() - started) / int(rounds) * 1000, "plan" in answer.get("extensions", {})
    finally:
        await datastore.aclose()

print(json.dumps(asyncio.run(main())))
"""


def measure(checkout: Path, endpoint: str, table: str, token: str, env: dict[str, str], *, explain: bool) -> float:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, endpoint, table, token, json.dumps(env), str(ROUNDS), "1" if explain else "0"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    ms, planned = json.loads(done.stdout)
    assert planned is explain, "the plan must be there exactly when asked for"
    return float(ms)


def baseline_checkout(given: str | None) -> tuple[Path, Path | None]:
    """The checkout to compare with, and a temporary worktree to remove after (None if given)."""
    if given is not None:
        return Path(given), None
    base = subprocess.run(
        ["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    where = Path(tempfile.mkdtemp(prefix="bench-explain-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(where), base], cwd=ROOT, capture_output=True, check=True)
    return where, where


def main() -> None:
    baseline, temporary = baseline_checkout(sys.argv[1] if len(sys.argv) > 1 else None)
    try:
        with in_process(cost_in_response=True) as world:
            endpoint, table = world.settings.endpoint_url or "", world.settings.table_name
            env = {
                "HR_ENV": "bench",
                "ALLOWED_HOSTS": "bench",
                "JWT_SECRET": world.api.jwt_secret,
                "MAX_QUERY_COST": "1000000",
                "TENANT_COST_PER_SECOND": "0",
            }
            figures: dict[str, list[float]] = {"this checkout, explain off": [], f"baseline ({baseline.name})": []}
            for _ in range(RUNS):
                figures["this checkout, explain off"].append(
                    measure(ROOT, endpoint, table, world.admin, env, explain=False)
                )
                figures[f"baseline ({baseline.name})"].append(
                    measure(baseline, endpoint, table, world.admin, env, explain=False)
                )
            figures["this checkout, explain on"] = [measure(ROOT, endpoint, table, world.admin, env, explain=True)]
    finally:
        if temporary is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(temporary)], cwd=ROOT, check=False)
            shutil.rmtree(temporary, ignore_errors=True)
    print(f"Q1 server CPU ms per request ({ROUNDS} requests a run, runs alternating)")
    print(f"{'':32} {'runs':>24} {'median':>8}")
    for name, runs in figures.items():
        print(f"{name:32} {' '.join(f'{ms:7.1f}' for ms in runs):>24} {statistics.median(runs):8.1f}")


if __name__ == "__main__":
    main()
