"""The stream reader's lease and checkpoints: one holder at a time, taken over once expired."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.errors import ScopeViolation
from datastore.feed.lease import Checkpoints, Lease, LeaseLost, group_name, holder_name
from datastore.kinds import layout
from datastore.table.scoped import Table
from datastore.values import ids, items
from tests.blocking import run


class Clock:
    def __init__(self) -> None:
        self.now = items.now()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def a_group() -> str:
    return group_name("host", ids.new_id())


def test_acquire__free_lease__taken_and_refused_to_another_while_it_lasts(own_table: Table) -> None:
    group, clock = a_group(), Clock()
    first = Lease(own_table, group, "100-1", 10, clock=clock)
    second = Lease(own_table, group, "200-1", 10, clock=clock)

    assert run(first.acquire()) and first.generation == 1
    assert not run(second.acquire()) and not second.held
    assert run(first.acquire()) and first.generation == 1  # its own lease: renewed, same generation
    current = run(first.current())
    assert (
        current is not None and current.holder == "100-1" and current.lease_until == clock.now + timedelta(seconds=10)
    )


def test_renew__extends__after_expiry_another_takes_it_and_the_old_holder_learns_it_lost(own_table: Table) -> None:
    group, clock = a_group(), Clock()
    first = Lease(own_table, group, "100-1", 10, clock=clock)
    second = Lease(own_table, group, "200-1", 10, clock=clock)
    assert run(first.acquire())
    clock.advance(8)
    run(first.renew())
    clock.advance(8)
    assert not run(second.acquire())  # renewed at 8 s: good until 18 s

    clock.advance(3)  # 19 s: expired, the holder crashed
    assert run(second.acquire()) and second.generation == 2
    with pytest.raises(LeaseLost):
        run(first.renew())
    assert not first.held


def test_acquire__several_takers_race_for_an_expired_lease__exactly_one_wins(own_table: Table) -> None:
    group, clock = a_group(), Clock()
    assert run(Lease(own_table, group, "dead-1", 1, clock=clock).acquire())
    clock.advance(5)
    for race in range(5):
        takers = [Lease(own_table, group, f"{n}-{race}", 1, clock=clock) for n in range(4)]
        start = threading.Barrier(len(takers))
        won: list[bool] = []

        def take(lease: Lease, start: threading.Barrier = start, won: list[bool] = won) -> None:
            start.wait()
            won.append(run(lease.acquire()))

        threads = [threading.Thread(target=take, args=(lease,)) for lease in takers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert won.count(True) == 1
        clock.advance(5)


def test_release__another_takes_it_at_once(own_table: Table) -> None:
    group, clock = a_group(), Clock()
    first = Lease(own_table, group, "100-1", 60, clock=clock)
    second = Lease(own_table, group, "200-1", 60, clock=clock)
    assert run(first.acquire())
    run(first.release())
    assert run(second.acquire()) and second.generation == 2


def test_lease_item__declared_with_its_ttl(own_table: Table, client: DynamoDBClient) -> None:
    group, clock = a_group(), Clock()
    assert run(Lease(own_table, group, holder_name(42, 7), 10, clock=clock).acquire())
    item = client.get_item(TableName=own_table.name, Key=layout.FEED_LEASE.key_at(group).wire())["Item"]
    assert item["entity"] == {"S": "FeedLease"} and item["holder"] == {"S": "42-7"}
    assert int(item[layout.EXPIRES_AT]["N"]) > int(clock.now.timestamp()) + 86_400


def test_checkpoints__per_shard_and_per_stream(own_table: Table) -> None:
    group = a_group()
    checkpoints = Checkpoints(own_table, group)
    run(checkpoints.save("arn:stream/1", "shard-a", "00000000000000000100"))
    run(checkpoints.save("arn:stream/1", "shard-b", "00000000000000000200"))
    run(checkpoints.save("arn:stream/1", "shard-a", "00000000000000000150"))
    run(checkpoints.save("arn:stream/2", "shard-z", "00000000000000000001"))

    assert run(checkpoints.load("arn:stream/1")) == {
        "shard-a": "00000000000000000150",
        "shard-b": "00000000000000000200",
    }
    assert run(checkpoints.load("arn:stream/2")) == {"shard-z": "00000000000000000001"}
    assert run(Checkpoints(own_table, a_group()).load("arn:stream/1")) == {}  # another group's are not its own


def test_feed_scope__another_group_s_partition__refused_before_sending(own_table: Table) -> None:
    lease = Lease(own_table, "mine", "1", 10)
    with pytest.raises(ScopeViolation):
        run(lease.table.get(layout.FEED_LEASE.key_at("theirs")))


def test_group_name__only_characters_safe_in_a_key_and_a_socket_name() -> None:
    assert group_name("ip-10-0-0-1.ec2#internal", 123, "45 6") == "ip-10-0-0-1.ec2_internal-123-45_6"


def test_acquire__same_holder_name_in_a_new_lease__waits_for_expiry_then_takes_a_new_generation(
    own_table: Table,
) -> None:
    """Two hubs of one process (or a hub started again) share a holder name: the second is not
    the first. It neither takes the first's live lease nor reuses its generation, whose reader
    socket (an abstract address named by the generation) a stale reader may still have bound."""
    group, clock = a_group(), Clock()
    first = Lease(own_table, group, "100-1", 10, clock=clock)
    again = Lease(own_table, group, "100-1", 10, clock=clock)
    assert run(first.acquire()) and first.generation == 1

    assert not run(again.acquire()) and not again.held
    run(first.release())
    assert run(again.acquire()) and again.generation == 2
    with pytest.raises(LeaseLost):
        run(first.renew())
