"""DynamoDB Local warmed up before anything is measured.

DynamoDB Local is a JVM. For its first few hundred requests its JIT compiler threads (C1,
C2) recompile the hot paths of the engine, and on this 2-core machine they take a whole core
doing it: measured on the floor's Q1 right after the dataset is written, the compiler used
25-35 ms of CPU per Q1, against 15 ms for Jetty and 9 ms for SQLite together, and it took
about 150 Q1s to fall to 5-10 ms. Whichever variant the bench measured first (the product)
paid for the warm-up in its latencies and throughput, and the ones after it did not.

So the bench first runs the floor's queries in rounds until the compiler has settled: until
its threads took at most ``SETTLED`` of the engine's CPU in two rounds running, read from
``/proc/<pid>/task``. Without ``/proc`` (not Linux) it runs ``MIN_ROUNDS`` rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SETTLED = 0.2  # the compiler's share of the engine's CPU in a settled round
MIN_ROUNDS, MAX_SECONDS = 3, 120.0


@dataclass(frozen=True)
class Warmup:
    rounds: int
    seconds: float
    compiler_share: float | None  # in the last round; None without /proc

    def __str__(self) -> str:
        share = "" if self.compiler_share is None else f"; JIT compiler {self.compiler_share:.0%} of its CPU at the end"
        return f"DynamoDB Local warmed up: {self.rounds} rounds of stock calls in {self.seconds:.0f}s{share}"


def cpu_ticks(stat: Path) -> int:
    """User plus system CPU, in clock ticks, from a ``/proc`` ``stat`` file (a process's or a thread's)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()  # the name, in parentheses, may hold spaces
    return int(fields[11]) + int(fields[12])


def _thread_ticks(pid: int) -> dict[str, tuple[bool, int]] | None:
    """Each thread of ``pid``: whether it is a JIT compiler thread, and its CPU ticks."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    ticks: dict[str, tuple[bool, int]] = {}
    for task in tasks:
        try:
            ticks[task.name] = ("CompilerThre" in (task / "comm").read_text(), cpu_ticks(task / "stat"))
        except OSError:
            continue  # the thread ended meanwhile
    return ticks


def _compiler_share(before: dict[str, tuple[bool, int]], after: dict[str, tuple[bool, int]]) -> float:
    total = compiler = 0
    for thread, (is_compiler, ticks) in after.items():
        used = ticks - before.get(thread, (is_compiler, 0))[1]
        total += used
        compiler += used if is_compiler else 0
    return compiler / total if total else 0.0


def warm_up(engine_pid: int | None, queries: Sequence[Callable[[], Any]]) -> Warmup:
    """Run ``queries`` in rounds until the engine's JIT compiler has settled (see the module)."""
    started = time.monotonic()
    settled_rounds, rounds, share = 0, 0, None
    while time.monotonic() - started < MAX_SECONDS:
        before = None if engine_pid is None else _thread_ticks(engine_pid)
        round_started = time.monotonic()
        # A round of at least a second: enough clock ticks (10 ms each) to tell a share.
        while time.monotonic() - round_started < 1.0:
            for query in queries:
                query()
        rounds += 1
        after = None if engine_pid is None else _thread_ticks(engine_pid)
        if before is None or after is None:
            if rounds >= MIN_ROUNDS:
                break
            continue
        share = _compiler_share(before, after)
        settled_rounds = settled_rounds + 1 if share <= SETTLED else 0
        if settled_rounds >= 2 and rounds >= MIN_ROUNDS:
            break
    return Warmup(rounds, time.monotonic() - started, share)
