"""The webhooks lane (bench/webhooks.py), run small: it produces its three figures (none asserted on)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from tests.paths import ROOT


def test_webhooks_lane__small_run__writes_the_lag_and_throughput_figures(
    dynamodb_endpoint: str, tmp_path: Path
) -> None:
    results = tmp_path / "latest.json"
    results.write_bytes(orjson.dumps({"queries": {"Q1": {}}}))  # what `python -m bench` wrote: kept
    subprocess.run(
        [
            *(sys.executable, "-m", "bench.webhooks", "-n", "3", "--burst", "5"),
            *("--endpoint", dynamodb_endpoint, "--results", str(results)),
        ],
        cwd=ROOT,
        check=True,
        timeout=300,
    )
    written = orjson.loads(results.read_bytes())
    assert written["queries"] == {"Q1": {}}
    figures = written["webhooks"]
    for name in ("webhook_lag_p50_ms", "webhook_lag_p95_ms", "webhook_deliveries_per_second"):
        assert isinstance(figures[name], float) and figures[name] > 0, name
    assert figures["webhook_lag_p50_ms"] <= figures["webhook_lag_p95_ms"]
    assert (figures["lag_samples"], figures["burst"]) == (3, 5)
