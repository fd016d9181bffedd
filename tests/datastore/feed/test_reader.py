"""The stream reader against DynamoDB Local's streams: where it starts, checkpoints, and what it survives.

Errors DynamoDB Local does not produce on demand (an expired iterator, a trimmed position,
throttling) are injected at the client boundary (conftest.stream_faults), answered as
DynamoDB would, before the request leaves the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from datastore.feed.lease import Checkpoints
from datastore.feed.reader import EXPIRED, NOT_FOUND, TRIMMED, NoStream, StreamReader
from datastore.feed.records import StreamRecord
from datastore.table import transact
from datastore.table.scoped import Table
from datastore.tenancy.scope import LayoutScope
from datastore.upkeep.provision import table_definition
from datastore.values import ids, items
from tests.blocking import run
from tests.datastore.feed.conftest import stream_faults
from tests.datastore.support import drop_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

GROUP = "test-reader"


def mark(table: Table, label: str) -> None:
    """One item in the table's LAYOUT partition (the reader does not care what it writes)."""
    run(
        table.with_scope(LayoutScope()).write(
            [transact.put({"PK": {"S": "LAYOUT"}, "SK": {"S": f"MARK#{label}"}, "label": items.s(label)})]
        )
    )


def labels(found: list[StreamRecord]) -> list[str]:
    return [record.new_image["label"]["S"] for record in found if record.new_image and "label" in record.new_image]


def read_all(reader: StreamReader) -> list[StreamRecord]:
    found: list[StreamRecord] = []
    while batch := run(reader.poll()):
        found += batch
    return found


def test_start__at_latest__only_what_is_written_after(own_table: Table, streams: Any, client: DynamoDBClient) -> None:
    mark(own_table, "before")
    reader = StreamReader(streams, client, own_table.name)
    run(reader.start())
    for label in ("one", "two", "three"):
        mark(own_table, label)

    assert labels(read_all(reader)) == ["one", "two", "three"]
    assert run(reader.poll()) == []


def test_checkpoint__next_reader_goes_on_after_it__a_record_read_but_not_checkpointed_comes_again(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    checkpoints = Checkpoints(own_table, GROUP)
    first = StreamReader(streams, client, own_table.name, checkpoints)
    run(first.start())
    mark(own_table, "a")
    assert labels(read_all(first)) == ["a"]
    assert run(first.checkpoint()) == 1
    mark(own_table, "b")
    assert labels(read_all(first)) == ["b"]  # handed on, then the reader dies before its checkpoint

    mark(own_table, "c")
    second = StreamReader(streams, client, own_table.name, Checkpoints(own_table, GROUP))
    run(second.start())

    assert labels(read_all(second)) == ["b", "c"]  # at least once: nothing lost, "a" not again
    assert run(second.checkpoint()) == 1 and run(second.checkpoint()) == 0


def test_start__table_without_stream__no_stream_naming_the_command(client: DynamoDBClient, streams: Any) -> None:
    name = f"hr-nostream-{ids.new_id().lower()}"
    definition = {key: value for key, value in table_definition(name).items() if key != "StreamSpecification"}
    client.create_table(**definition)  # type: ignore[arg-type]
    try:
        with pytest.raises(NoStream, match=r"server\.py migrate"):
            run(StreamReader(streams, client, name).start())
    finally:
        drop_table(client, name)


def test_stream_turned_off_and_on__old_shard_read_to_its_end_then_the_new_stream_with_a_gap(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    reader = StreamReader(streams, client, own_table.name, describe_every=0)
    run(reader.start())
    mark(own_table, "old")
    client.update_table(TableName=own_table.name, StreamSpecification={"StreamEnabled": False})
    mark(own_table, "unstreamed")
    client.update_table(
        TableName=own_table.name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    )
    mark(own_table, "new")

    found = read_all(reader)

    # What the old stream holds first, then the new stream's; nothing in between was streamed.
    assert labels(found) == ["old", "new"]
    [gap] = reader.take_gaps()
    assert "stream changed" in gap


def test_stream_turned_off__its_shard_read_to_its_end_then_no_stream(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    reader = StreamReader(streams, client, own_table.name)
    run(reader.start())
    mark(own_table, "last")
    client.update_table(TableName=own_table.name, StreamSpecification={"StreamEnabled": False})

    assert labels(run(reader.poll())) == ["last"]
    [shard] = reader.shards
    assert reader.finished == {shard.shard_id}  # no next iterator: closed, and read to its end
    with pytest.raises(NoStream, match="turned off"):
        run(reader.poll())


def test_expired_iterator__fresh_one_after_the_position__nothing_lost_or_repeated(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    reader = StreamReader(streams, client, own_table.name)
    run(reader.start())
    mark(own_table, "a")
    assert labels(read_all(reader)) == ["a"]
    mark(own_table, "b")
    with stream_faults(streams, "GetRecords") as faults:
        faults.planned = [EXPIRED]
        found = read_all(reader)
    assert faults.injected == [EXPIRED]
    assert labels(found) == ["b"]
    assert reader.take_gaps() == []


def test_trimmed_position__read_from_the_oldest_record__gap_reported(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    reader = StreamReader(streams, client, own_table.name)
    run(reader.start())
    mark(own_table, "a")
    assert labels(read_all(reader)) == ["a"]
    mark(own_table, "b")
    with stream_faults(streams, "GetRecords") as faults:
        faults.planned = [TRIMMED]
        found = read_all(reader)
    # From the shard's oldest record: what the table's creation wrote, "a" again, then "b".
    assert labels(found)[-2:] == ["a", "b"]
    [gap] = reader.take_gaps()
    assert "trimmed" in gap


def test_latest_on_an_empty_stream_trimmed__dynamodb_local_quirk__read_from_its_start_without_a_gap(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    with stream_faults(streams, "GetShardIterator") as faults:
        faults.planned = [TRIMMED]
        reader = StreamReader(streams, client, own_table.name)
        run(reader.start())
    mark(own_table, "first")
    assert faults.injected == [TRIMMED]
    assert "first" in labels(read_all(reader))
    assert reader.take_gaps() == []


def test_shard_without_iterators__finished(own_table: Table, streams: Any, client: DynamoDBClient) -> None:
    with stream_faults(streams, "GetShardIterator") as faults:
        faults.planned = [NOT_FOUND]
        reader = StreamReader(streams, client, own_table.name)
        run(reader.start())
    assert faults.injected == [NOT_FOUND]
    assert reader.finished == {shard.shard_id for shard in reader.shards}
    assert run(reader.poll()) == []


def test_throttled__that_shard_waits_for_the_next_poll(own_table: Table, streams: Any, client: DynamoDBClient) -> None:
    reader = StreamReader(streams, client, own_table.name)
    run(reader.start())
    mark(own_table, "a")
    with stream_faults(streams, "GetRecords") as faults:
        faults.planned = ["LimitExceededException"]
        assert run(reader.poll()) == []
    assert labels(read_all(reader)) == ["a"]


def test_checkpoint__past_the_readers_own_items_only__nothing_written(
    own_table: Table, streams: Any, client: DynamoDBClient
) -> None:
    checkpoints = Checkpoints(own_table, GROUP)
    reader = StreamReader(streams, client, own_table.name, checkpoints)
    run(reader.start())
    assert not reader.checkpoint_due
    mark(own_table, "a")
    read_all(reader)
    assert reader.checkpoint_due
    assert run(reader.checkpoint()) == 1  # this write is a record of the checkpoint item itself
    assert not reader.checkpoint_due

    assert [record.kind for record in read_all(reader)] == ["FeedCheckpoint"]
    assert not reader.checkpoint_due  # the host's loop skips the call
    assert run(reader.checkpoint()) == 0  # nothing but its own item: no checkpoint, no record of one
    assert read_all(reader) == []
