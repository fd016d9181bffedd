"""CallLog.waves(): sequential rounds of DynamoDB calls, from loader depths or recorded timings."""

from __future__ import annotations

from datastore.aws.calls import Call, CallLog


def log_of(*calls: tuple[str, float, float, int | None]) -> CallLog:
    log = CallLog()
    for operation, started, finished, batch in calls:
        log.add(Call(operation, {}, started, finished, batch=batch))
    return log


def operations(log: CallLog) -> list[list[str]]:
    return [sorted(call.operation for call in wave) for wave in log.waves()]


def test_waves__calls_one_after_another__one_wave_each() -> None:
    log = log_of(("GetItem", 0.0, 1.0, None), ("Query", 1.5, 2.0, None), ("BatchGetItem", 2.5, 3.0, None))
    assert operations(log) == [["GetItem"], ["Query"], ["BatchGetItem"]]


def test_waves__overlapping_calls__one_wave() -> None:
    log = log_of(("GetItem", 0.0, 1.0, None), ("Query", 0.1, 0.5, None))
    assert operations(log) == [["GetItem", "Query"]]


def test_waves__a_batch_spread_by_the_pool__stays_one_wave() -> None:
    # Four Queries of one batch through two threads: the last two start after the first end.
    log = log_of(
        ("Query", 0.0, 1.0, 7),
        ("Query", 0.0, 1.0, 7),
        ("Query", 1.0, 2.0, 7),
        ("Query", 1.0, 2.0, 7),
        ("BatchGetItem", 2.5, 3.0, 8),
    )
    assert operations(log) == [["Query"] * 4, ["BatchGetItem"]]


def test_waves__a_slow_independent_call__does_not_pull_the_next_level_into_its_wave() -> None:
    # Level 1: a slow organisation read beside a fast department list; level 2 starts when the
    # department list ends, while the organisation read is still running.
    log = log_of(("Query", 0.0, 5.0, None), ("Query", 0.0, 1.0, None), ("Query", 1.2, 2.0, 3), ("Query", 1.2, 2.0, 3))
    assert [len(wave) for wave in log.waves()] == [2, 2]


def test_waves__nothing__no_waves() -> None:
    assert CallLog().waves() == []


def test_waves__every_call_from_a_batch__grouped_by_depth_not_timing() -> None:
    # Two chains of two reads after a first one; the second chain's first read is slow, so its
    # second starts after the first chain has ended. Timings would say four rounds.
    depths = [("BatchGetItem", 0.0, 1.0, 1, 1), ("GetItem", 1.1, 1.5, 2, 2), ("Query", 1.1, 4.0, 3, 2)]
    depths += [("GetItem", 1.6, 2.0, 4, 3), ("BatchGetItem", 4.1, 5.0, 5, 3)]
    log = CallLog()
    for operation, started, finished, batch, depth in depths:
        log.add(Call(operation, {}, started, finished, batch=batch, dispatched=started, depth=depth))
    assert operations(log) == [["BatchGetItem"], ["GetItem", "Query"], ["BatchGetItem", "GetItem"]]
    log.add(Call("PutItem", {}, 5.5, 6.0))  # a lone call: no depth, so the timings decide
    assert len(log.waves()) == 5
