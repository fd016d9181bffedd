"""Where ``python -m bench`` writes its figures, and the percentile every lane reports latencies by."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "latest.json"


def pct(values: list[float], p: float) -> float:
    """The ``p`` percentile of ``values`` (seconds), in milliseconds to one decimal."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 1)
