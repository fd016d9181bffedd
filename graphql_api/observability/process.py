"""Process metrics (CPU, memory, file descriptors) of every worker, in multiprocess mode.

prometheus-client's multiprocess mode sums the workers' files and drops the process collector
(its figures live in each worker's /proc, not in a file). So each worker reads its own figures
with the library's ``ProcessCollector`` every REFRESH_SECONDS and writes them into gauges of
mode ``liveall``, which the library labels with the worker's pid: the usual names
(``process_resident_memory_bytes``, ``process_cpu_seconds_total``, ...), one series per worker.
``process_cpu_seconds_total`` is such a gauge too (a value set, not a counter added to), so
``rate()`` works on it as on the single-process counter.

The parent's /metrics (``LiveWorkersCollector``) keeps only live workers: a worker that died
(killed, or replaced by uvicorn) is dropped at the next scrape with the library's
``mark_process_dead``, which also clears its share of ``hr_requests_in_flight`` (``livesum``).
So the ``pid`` label has at most WORKERS values at a time.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from typing import Final

from prometheus_client import Gauge, ProcessCollector
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

# Seconds between two readings of a worker's /proc: a scrape sees figures at most this old.
REFRESH_SECONDS: Final = 5.0

# The process collector's samples, each with its help text.
PROCESS_SAMPLES: Final = {
    "process_virtual_memory_bytes": "Virtual memory size in bytes, per worker",
    "process_resident_memory_bytes": "Resident memory size in bytes, per worker",
    "process_start_time_seconds": "Start time of the worker since the Unix epoch in seconds",
    "process_cpu_seconds_total": "Total user and system CPU time the worker spent, in seconds",
    "process_open_fds": "Number of open file descriptors, per worker",
    "process_max_fds": "Maximum number of open file descriptors, per worker",
}

_started = threading.Lock()
_thread: threading.Thread | None = None


class WorkerProcessMetrics:
    """This worker's process figures, written to its multiprocess files."""

    def __init__(self) -> None:
        self._reader = ProcessCollector(registry=None)
        # registry=None: the values still go to this worker's files (multiprocess mode), and
        # the worker's own default registry keeps its process collector under these names.
        self._gauges = {
            name: Gauge(name, help_text, multiprocess_mode="liveall", registry=None)
            for name, help_text in PROCESS_SAMPLES.items()
        }

    def refresh(self) -> None:
        for family in self._reader.collect():
            for sample in family.samples:
                gauge = self._gauges.get(sample.name)
                if gauge is not None:
                    gauge.set(sample.value)


def start_worker_process_metrics() -> None:
    """Refresh this worker's process metrics now and every REFRESH_SECONDS; once per process."""
    global _thread  # one refresher per process, like the metrics themselves
    with _started:
        if _thread is not None:
            return
        metrics = WorkerProcessMetrics()
        metrics.refresh()

        def refresh_forever() -> None:
            while True:
                time.sleep(REFRESH_SECONDS)
                metrics.refresh()

        _thread = threading.Thread(target=refresh_forever, name="hr-process-metrics", daemon=True)
        _thread.start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process by now: not ours, but not provably dead either
    return True


class LiveWorkersCollector(Collector):
    """The workers' files summed (MultiProcessCollector), without the workers that died."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._files = MultiProcessCollector(None, path=path)  # type: ignore[no-untyped-call]

    def collect(self) -> Iterable[Metric]:
        families: list[Metric] = list(self._files.collect())  # type: ignore[no-untyped-call]
        pids = {
            sample.labels["pid"]
            for family in families
            if family.name in PROCESS_SAMPLES
            for sample in family.samples
            if "pid" in sample.labels
        }
        dead = [int(pid) for pid in pids if pid.isdigit() and not _alive(int(pid))]
        for pid in dead:
            mark_process_dead(pid, self.path)  # type: ignore[no-untyped-call]
        return list(self._files.collect()) if dead else families  # type: ignore[no-untyped-call]
