"""Bounded label values: the first N distinct values, then "other"."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from graphql_api.observability.labels import MAX_VALUE_LENGTH, OTHER, BoundedLabel


def test_bounded_label__at_the_bound__each_value_kept() -> None:
    label = BoundedLabel(3)

    assert [label(value) for value in ("a", "b", "c", "a", "c")] == ["a", "b", "c", "a", "c"]


def test_bounded_label__one_past_the_bound__other_and_the_first_kept() -> None:
    label = BoundedLabel(3)
    for value in ("a", "b", "c"):
        label(value)

    assert label("d") == OTHER
    assert label("a") == "a"
    assert label("d") == OTHER


def test_bounded_label__zero__everything_other() -> None:
    assert BoundedLabel(0)("a") == OTHER


def test_bounded_label__long_value__truncated() -> None:
    assert BoundedLabel(1)("x" * 1000) == "x" * MAX_VALUE_LENGTH


def test_bounded_label__many_threads__never_more_than_the_bound() -> None:
    label = BoundedLabel(10)
    with ThreadPoolExecutor(8) as pool:
        results = set(pool.map(label, (f"v{i}" for i in range(1000))))

    assert len(results - {OTHER}) == 10
    assert OTHER in results
