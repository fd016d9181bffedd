"""The speed targets (the read path's and the cold start's), checked against one ``python -m bench``
run's results.

Printed after the tables so a run says for itself which targets it met. Figures only: a
bench run on a shared machine is a measurement, never a test (README "Bench").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Row = dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Target:
    query: str
    what: str
    # The measured figure from the query's row; None when the run has no such figure.
    measure: Callable[[Row], float | None]
    bound: float
    at_most: bool = True

    def verdict(self, rows: dict[str, Row]) -> tuple[float | None, bool]:
        row = rows.get(self.query)
        value = self.measure(row) if row else None
        if value is None:
            return None, False
        return value, value <= self.bound if self.at_most else value >= self.bound


def _ratio(metric: str, over: str = "floor", of: str = "product") -> Callable[[Row], float | None]:
    def measure(row: Row) -> float | None:
        a, b = row.get(of, {}).get(metric), row.get(over, {}).get(metric)
        return round(a / b, 2) if isinstance(a, int | float) and isinstance(b, int | float) and b else None

    return measure


def _excess(metric: str) -> Callable[[Row], float | None]:
    """The product's figure minus the floor's."""

    def measure(row: Row) -> float | None:
        a, b = row.get("product", {}).get(metric), row.get("floor", {}).get(metric)
        return a - b if isinstance(a, int | float) and isinstance(b, int | float) else None

    return measure


def _cpu_c16_over_c1(row: Row) -> float | None:
    """The product's server CPU per request at concurrency 16 over its own at concurrency 1."""
    product = row.get("product", {})
    c1, c16 = product.get("cpu_ms"), product.get("cpu_ms_c16")
    return round(c16 / c1, 2) if isinstance(c1, int | float) and isinstance(c16, int | float) and c1 else None


def _product(metric: str) -> Callable[[Row], float | None]:
    def measure(row: Row) -> float | None:
        value = row.get("product", {}).get(metric)
        return value if isinstance(value, int | float) else None

    return measure


# Q7's p50 before the work on it (ms, this machine), of which the target is half.
Q7_P50_BEFORE = 706.0


def _rcu_over_min(row: Row) -> float | None:
    product = row.get("product", {})
    rcu, minimum = product.get("rcu"), product.get("rcu_min")
    return round(rcu / minimum, 2) if rcu is not None and minimum else None


def targets() -> Iterator[Target]:
    for query, bound in (("Q1", 0.5), ("Q2", 0.65), ("Q3", 0.75), ("Q4", 0.9)):
        yield Target(query, "p50, product/floor, concurrency 1", _ratio("p50_ms"), bound)
    for query, bound in (("Q1", 2.0), ("Q2", 1.5), ("Q3", 1.4), ("Q4", 1.2)):
        yield Target(query, "rps at concurrency 16, product/floor, one worker", _ratio("rps_c16"), bound, at_most=False)
    for query in ("Q1", "Q2", "Q3", "Q4"):
        yield Target(query, "server CPU per request, c16/c1", _cpu_c16_over_c1, 1.05)
    yield Target("Q7", "p50 ms, at most half of 706", _product("p50_ms"), Q7_P50_BEFORE / 2)
    for query in ("Q1", "Q2", "Q3", "Q4"):
        yield Target(query, "DynamoDB requests, product minus floor", _excess("requests"), 1)
        yield Target(query, "waves, product minus floor", _excess("waves"), 0)
        yield Target(query, "RCU, product/minimum", _rcu_over_min, 1.25)
    for query in ("Q2", "Q4"):
        yield Target(
            query, "DynamoDB requests, naive/product", _ratio("requests", over="product", of="naive"), 20, at_most=False
        )
    # The cold-start lane's row (bench/cold_start.py): spawn to the first answer, and RSS then.
    yield Target("start", "spawn to first answer, server.py/bare Starlette", _ratio("cold_start_ms"), 3.0)
    yield Target("start", "RSS MB at the first answer", _product("rss_mb"), 90)


def print_verdicts(rows: dict[str, Row]) -> list[dict[str, Any]]:
    """Print each target with its figure and whether this run met it; return them as records."""
    print("\ntargets")
    records: list[dict[str, Any]] = []
    for target in targets():
        value, met = target.verdict(rows)
        bound = f"{'<=' if target.at_most else '>='} {target.bound:g}"
        figure = "-" if value is None else f"{value:g}"
        print(f"  {target.query:4}{target.what:52}{figure:>8}  {bound:>8}  {'met' if met else 'NOT MET'}")
        records.append({"query": target.query, "what": target.what, "value": value, "bound": bound, "met": met})
    return records
