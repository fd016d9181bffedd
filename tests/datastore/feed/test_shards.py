"""Shard lineage: parents before children, from DescribeStream's own shape.

DynamoDB Local keeps one shard per stream, so the shard lists here are DescribeStream answers
as AWS gives them after shards closed and split (a closed parent with two children, a
trimmed grandparent, siblings out of order in the list).
"""

from __future__ import annotations

from typing import Any

from datastore.feed.shards import Shard, lineage_order, readable


def described(shard_id: str, start: int, *, parent: str | None = None, end: int | None = None) -> dict[str, Any]:
    numbers = {"StartingSequenceNumber": f"{start:021d}"}
    if end is not None:
        numbers["EndingSequenceNumber"] = f"{end:021d}"
    shard: dict[str, Any] = {"ShardId": shard_id, "SequenceNumberRange": numbers}
    if parent is not None:
        shard["ParentShardId"] = parent
    return shard


# A stream after two generations of splits, listed children first (DescribeStream does not
# promise an order): "root" was trimmed, so its child "a" has a parent no longer listed.
AWS_SHARDS = [
    described("shardId-c2", 3000, parent="shardId-b"),
    described("shardId-c1", 2900, parent="shardId-b"),
    described("shardId-b", 2000, parent="shardId-a", end=2899),
    described("shardId-a", 1000, parent="shardId-root", end=1999),
    described("shardId-x", 1500),
]


def ids(shards: list[Shard]) -> list[str]:
    return [shard.shard_id for shard in shards]


def test_shard_of__describe_stream_shape__open_and_closed() -> None:
    shards = [Shard.of(shard) for shard in AWS_SHARDS]
    assert [(s.shard_id, s.parent_id, s.closed) for s in shards[2:4]] == [
        ("shardId-b", "shardId-a", True),
        ("shardId-a", "shardId-root", True),
    ]
    assert not shards[0].closed and shards[0].starting_sequence_number == "000000000000000003000"


def test_lineage_order__every_parent_before_its_children_siblings_by_sequence() -> None:
    order = ids(lineage_order(Shard.of(shard) for shard in AWS_SHARDS))
    assert order == ["shardId-a", "shardId-x", "shardId-b", "shardId-c1", "shardId-c2"]


def test_readable__children_wait_for_their_parent_to_finish() -> None:
    shards = [Shard.of(shard) for shard in AWS_SHARDS]
    assert ids(readable(shards, set())) == ["shardId-a", "shardId-x"]  # root trimmed: "a" is readable
    assert ids(readable(shards, {"shardId-a"})) == ["shardId-x", "shardId-b"]
    assert ids(readable(shards, {"shardId-a", "shardId-b"})) == ["shardId-x", "shardId-c1", "shardId-c2"]
    assert ids(readable(shards, {"shardId-a", "shardId-b", "shardId-c1", "shardId-c2", "shardId-x"})) == []


def test_lineage_order__parent_cycle_in_a_bad_answer__still_ends() -> None:
    looped = [Shard.of(described("p", 1, parent="q")), Shard.of(described("q", 2, parent="p"))]
    assert sorted(ids(lineage_order(looped))) == ["p", "q"]
