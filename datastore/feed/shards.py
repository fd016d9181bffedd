"""The order a stream's shards are read in: each parent to its end before its children.

DynamoDB writes an item's records into one shard at a time; when a shard closes (every few
hours, or when the table's partitions split) its records go on in its child shards. Reading
a child before its parent is finished would hand on an item's later changes before its
earlier ones. DescribeStream lists every shard of the last 24 hours with its parent; a parent
no longer listed has been trimmed, and its children are read at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Shard:
    shard_id: str
    parent_id: str | None
    starting_sequence_number: str
    # A closed shard has an ending sequence number: once read to it, it is finished.
    closed: bool

    @classmethod
    def of(cls, described: Mapping[str, Any]) -> Shard:
        numbers = described.get("SequenceNumberRange", {})
        return cls(
            shard_id=described["ShardId"],
            parent_id=described.get("ParentShardId"),
            starting_sequence_number=numbers.get("StartingSequenceNumber", ""),
            closed="EndingSequenceNumber" in numbers,
        )


def _sequence(shard: Shard) -> tuple[int, str]:
    number = shard.starting_sequence_number
    return (int(number) if number.isdigit() else 0, shard.shard_id)


def lineage_order(shards: Iterable[Shard]) -> list[Shard]:
    """Every shard after its parent (when the parent is listed), siblings by starting sequence."""
    listed = {shard.shard_id: shard for shard in shards}
    depth: dict[str, int] = {}

    def depth_of(shard: Shard) -> int:
        known = depth.get(shard.shard_id)
        if known is not None:
            return known
        seen: list[Shard] = []
        current: Shard | None = shard
        while current is not None and current.shard_id not in depth and current not in seen:
            seen.append(current)
            current = None if current.parent_id is None else listed.get(current.parent_id)
        base = -1 if current is None or current in seen else depth[current.shard_id]
        for found in reversed(seen):
            base += 1
            depth[found.shard_id] = base
        return depth[shard.shard_id]

    return sorted(listed.values(), key=lambda shard: (depth_of(shard), *_sequence(shard)))


def readable(shards: Sequence[Shard], finished: set[str]) -> list[Shard]:
    """The shards to read now, in lineage order: not finished, and with no listed parent left
    to finish."""
    listed = {shard.shard_id for shard in shards}
    return [
        shard
        for shard in lineage_order(shards)
        if shard.shard_id not in finished
        and (shard.parent_id is None or shard.parent_id not in listed or shard.parent_id in finished)
    ]
