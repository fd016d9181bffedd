"""Tenant buckets shared by a server's workers (graphql_api/limits/shared_buckets.py).

The arithmetic is the per-process buckets' (test_tenant_rate.py), checked here with a clock
the test moves; what is particular to sharing: two mappings of one file are one bucket, real
processes charging at once lose no charge, a full set gives its least recent slot away, and
the file is only ever one of our own. tests/test_server_workers.py shows the admitted rate of
one tenant on a real two-worker server.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphql_api.limits.shared_buckets import WAYS, SharedTenantBuckets, for_this_worker
from tests.server_process import ROOT


class HandClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> HandClock:
    return HandClock()


@pytest.fixture
def table(tmp_path: Path, clock: HandClock) -> Iterator[SharedTenantBuckets]:
    buckets = SharedTenantBuckets(tmp_path / "buckets", 100, 500, clock=clock)
    yield buckets
    buckets.close()


def test_bucket__burst_refill_and_refusal__as_the_per_process_buckets(
    table: SharedTenantBuckets, clock: HandClock
) -> None:
    assert table.charge("acme", 400).admitted
    refused = table.charge("acme", 300)  # 100 left: 200 short, at 100 a second
    assert not refused.admitted
    assert refused.retry_after == pytest.approx(2.0)
    clock.now += 1.999
    assert not table.charge("acme", 300).admitted
    clock.now += 0.001
    assert table.charge("acme", 300).admitted
    assert table.charge("globex", 500).admitted  # tenants are independent
    clock.now += 3600
    assert table.charge("acme", 500).admitted  # refilled to the burst only
    assert not table.charge("acme", 1).admitted
    assert table.charge("acme", 10_000).retry_after == pytest.approx(5.0)  # above the burst: a full bucket's wait


def test_two_mappings__one_file__one_bucket(tmp_path: Path, clock: HandClock) -> None:
    first = SharedTenantBuckets(tmp_path / "buckets", 100, 500, clock=clock)
    second = SharedTenantBuckets(tmp_path / "buckets", 100, 500, clock=clock)
    try:
        assert first.charge("acme", 300).admitted
        assert not second.charge("acme", 300).admitted  # what the first worker spent is gone for the second
        assert second.charge("acme", 200).admitted
        assert not first.charge("acme", 1).admitted
    finally:
        first.close()
        second.close()


def test_full_set__least_recently_charged_slot_given_away__full_again(tmp_path: Path, clock: HandClock) -> None:
    buckets = SharedTenantBuckets(tmp_path / "buckets", 100, 500, slots=WAYS, clock=clock)  # one set
    try:
        for tenant in range(WAYS):
            clock.now += 0.001  # a tenth of a unit refilled between charges
            assert buckets.charge(f"t{tenant}", 500).admitted
        clock.now += 0.001
        assert not buckets.charge("t0", 500).admitted  # t0 is now the most recently charged
        clock.now += 0.001
        assert buckets.charge("newcomer", 500).admitted  # takes t1's slot, the least recent
        assert not buckets.charge("t0", 500).admitted and not buckets.charge("t2", 500).admitted
        assert buckets.charge("t1", 500).admitted  # evicted: full again
    finally:
        buckets.close()


def test_clock_earlier_than_the_last_charge__bucket_full(table: SharedTenantBuckets, clock: HandClock) -> None:
    """A file from before a reboot holds times of another boot's monotonic clock."""
    assert table.charge("acme", 500).admitted
    clock.now -= 10_000
    assert table.charge("acme", 500).admitted


CHARGER = """
import sys
from pathlib import Path
from graphql_api.limits.shared_buckets import SharedTenantBuckets
buckets = SharedTenantBuckets(Path(sys.argv[1]), 1e-9, 1000)
print(sum(buckets.charge("acme", 1).admitted for _ in range(int(sys.argv[2]))))
"""


def test_processes_charging_at_once__no_charge_lost(tmp_path: Path) -> None:
    path, processes, charges = tmp_path / "buckets", 4, 600
    running = [
        subprocess.Popen(
            [sys.executable, "-c", CHARGER, str(path), str(charges)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        for _ in range(processes)
    ]
    admitted = [int(process.communicate(timeout=120)[0]) for process in running]
    # 2,400 charges of 1 on a bucket of 1,000 that refills a billionth a second: exactly 1,000 pass.
    assert sum(admitted) == 1000, admitted


def test_file__created_private__never_through_a_symlink(tmp_path: Path) -> None:
    path = tmp_path / "buckets"
    SharedTenantBuckets(path, 100, 500).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    link = tmp_path / "planted"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        SharedTenantBuckets(link, 100, 500)
    assert not (tmp_path / "elsewhere").exists()


def test_file__another_layout__refused(tmp_path: Path) -> None:
    path = tmp_path / "buckets"
    path.write_bytes(b"not a table" * 100)
    with pytest.raises(ValueError, match="another layout"):
        SharedTenantBuckets(path, 100, 500)


def test_for_this_worker__not_a_spawned_worker__none() -> None:
    assert os.getpid() > 0 and for_this_worker(100, 500) is None  # this process keeps its own
