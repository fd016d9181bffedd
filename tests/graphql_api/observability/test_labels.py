"""Bounded label values: tenants first-come up to N; operation names only once the server knows them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from graphql_api.observability.labels import MAX_VALUE_LENGTH, OTHER, BoundedLabel, OperationNames, operation_names


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


# --- operation names ---------------------------------------------------------------------


def test_operation_names__one_organisation__never_learned() -> None:
    names = OperationNames(limit=3, min_tenants=2)
    for _ in range(5):
        names.ran("Me", "org1")

    assert names.label("Me") == OTHER


def test_operation_names__second_organisation__learned_and_kept() -> None:
    names = OperationNames(limit=3, min_tenants=2)
    names.ran("Me", "org1")
    names.ran("Me", "org2")

    assert names.label("Me") == "Me"
    for index in range(100):  # later names, from many organisations, evict nothing
        names.ran(f"Other{index}", f"org{index}")
        names.ran(f"Other{index}", f"org{index + 1}")
    assert names.label("Me") == "Me"
    assert sum(names.label(f"Other{index}") != OTHER for index in range(100)) == 2  # the limit of 3


def test_operation_names__one_organisations_junk__cannot_push_out_what_others_vouch_for() -> None:
    names = OperationNames(limit=3, min_tenants=2)
    names.ran("Directory", "org1")
    for index in range(1000):
        names.ran(f"Junk{index}", "attacker")
    names.ran("Directory", "org2")

    assert names.label("Directory") == "Directory"
    assert names.label("Junk999") == OTHER


def test_operation_names__an_organisations_pending_names__bounded_by_the_limit() -> None:
    names = OperationNames(limit=2, min_tenants=2)
    for name in ("A", "B", "C"):  # org1's oldest pending name, A, is dropped
        names.ran(name, "org1")
    for name in ("A", "C"):
        names.ran(name, "org2")

    assert [names.label(name) for name in ("A", "B", "C")] == [OTHER, OTHER, "C"]


def test_operation_names__configured__labelled_without_running() -> None:
    names = OperationNames(limit=0, min_tenants=2, configured=("Ping",))

    assert names.label("Ping") == "Ping"
    names.ran("Pong", "org1")
    names.ran("Pong", "org2")
    assert names.label("Pong") == OTHER  # limit 0: nothing learned


def test_operation_names__trusted__only_the_manifests_names() -> None:
    names = OperationNames(limit=50, min_tenants=1, trusted=operation_names(["query Me { me { id } }", "{ x }"]))
    names.ran("Elsewhere", "org1")

    assert names.label("Me") == "Me"
    assert names.label("Elsewhere") == OTHER


def test_operation_names__many_threads__never_more_than_the_limit() -> None:
    names = OperationNames(limit=10, min_tenants=2)

    def vouch(index: int) -> None:
        names.ran(f"N{index % 40}", f"org{index}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(vouch, range(400)))

    assert sum(names.label(f"N{index}") != OTHER for index in range(40)) == 10


def test_operation_names__long_name__truncated_like_every_label() -> None:
    names = OperationNames(limit=1, min_tenants=1)
    names.ran("x" * 1000, "org1")

    assert names.label("x" * 1000) == "x" * MAX_VALUE_LENGTH
