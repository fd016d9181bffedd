"""The bench's concurrency-1 measurement (bench/__main__.py): variants in turn, each on its own budget."""

from __future__ import annotations

import time

import pytest

import bench.__main__ as bench_main


class Sleeper:
    """A variant whose request takes ``seconds`` and costs ``cpu`` seconds of CPU each."""

    def __init__(self, name: str, seconds: float, cpu: float, log: list[str]) -> None:
        self.name, self.seconds, self.cost, self.log = name, seconds, cpu, log
        self.spent = 0.0

    def once(self) -> None:
        self.log.append(self.name)
        time.sleep(self.seconds)
        self.spent += self.cost

    def cpu(self) -> float:
        return self.spent


def test_concurrency_1__variants_in_turn__each_on_its_own_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_main, "SECONDS_C1", 0.5)
    monkeypatch.setattr(bench_main, "MAX_C1", 20)
    log: list[str] = []
    fast, slow = Sleeper("fast", 0.001, 0.002, log), Sleeper("slow", 0.25, 0.05, log)
    found = bench_main.concurrency_1({"fast": fast, "slow": slow})  # type: ignore[dict-item]  # duck-typed variants
    fast_latencies, fast_cpu = found["fast"]
    slow_latencies, slow_cpu = found["slow"]
    # The slow one stops at its budget, past its three requests' minimum; the fast one goes on
    # to its own cap, and alternates with the slow one for as long as both run.
    assert len(slow_latencies) == 3
    assert len(fast_latencies) == 20
    assert log[:6] == ["fast", "slow"] * 3
    assert set(log[6:]) == {"fast"}
    assert all(latency >= 0.25 for latency in slow_latencies)
    # CPU per request, each from its own counter.
    assert fast_cpu == pytest.approx(2.0) and slow_cpu == pytest.approx(50.0)
