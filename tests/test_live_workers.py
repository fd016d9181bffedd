"""``server.py run`` with WORKERS=2: the stream reader's worker killed outright, and no event lost.

The in-process tests of the lease (tests/datastore/feed/test_host.py) stop a reader politely or
forge an expired lease; here the worker that holds the lease is sent SIGKILL, as the OOM
killer would: it releases nothing, its lease runs until ``leaseUntil``, its fan-out socket
and its subscribers' WebSockets just go. Meanwhile a department is created every
``WRITE_EVERY`` seconds (each with its audit event, the subscriptions' source), before the
kill, while nobody reads the stream, and after the surviving worker took the lease over.

Subscribers of ``auditEventAdded`` on both workers (which worker serves a connection is read
from /proc: the process that holds the accepted socket):

- on the surviving worker, the connection stays up and gets every event exactly once, in
  order (the live events, and the catch-up when it connects to the new reader, deduplicated),
  though the events written during the takeover outnumber its queue's bound
  (SUBSCRIPTION_QUEUE_EVENTS): a subscriber that keeps up is never closed SLOW by a failover;
- on the killed worker, the connection ends (1006); the client reconnects with ``after:`` its
  last cursor and gets every event it missed, then the rest, exactly once, in order.

uvicorn's supervisor starts a worker in the dead one's place. The expired lease goes to
whichever of the two live workers asks first (the survivor, or the new worker when it starts
just as the lease runs out: both happen); exactly one takes it, one generation more than
before, and the other follows.
The takeover time and the events written during it are printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from websockets.exceptions import ConnectionClosed

from datastore.aws.client import AsyncDynamo
from datastore.dev.local import free_port
from datastore.feed.lease import Lease, group_name
from datastore.kinds.bookkeeping import FeedLease
from datastore.kinds.entities import Employee, Plan
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope, TenantScope
from datastore.tenants import departments, organizations
from datastore.values import ids
from graphql_api.auth.tokens import issue_token
from graphql_api.host.files import owner_tag
from graphql_api.settings.api import ApiSettings
from tests import server_process
from tests.blocking import run
from tests.conftest import TEST_RETRY, provisioned, unique_domain
from tests.datastore.support import drop_table
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.subscriptions.ws import Socket, bearer, open_socket
from tests.test_server_workers import descendants

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WORKERS = 2
PER_WORKER = 2
LEASE_SECONDS = 5.0  # renewed every 5/3 s: a loaded machine stalls a renewal less than the 10/3 s to spare
WRITE_EVERY = 0.1
# Below the events written while nobody reads the stream (a lease's length at 10 a second): the
# takeover's burst, and the catch-up beside it, must not count against a connection that keeps up.
QUEUE_EVENTS = 10
AUDIT = "subscription Audit($after: String) { auditEventAdded(after: $after) { cursor action event { entityId } } }"


# --- which process serves a connection ----------------------------------------------------------


def socket_inode(server_port: int, client_port: int) -> int | None:
    """The inode of the server's end of the TCP connection from ``client_port`` (/proc/net/tcp*)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote = fields[1], fields[2]
                if int(local.rsplit(":", 1)[1], 16) == server_port and int(remote.rsplit(":", 1)[1], 16) == client_port:
                    return int(fields[9])
    return None


def serving_pid(candidates: list[int], server_port: int, client_port: int) -> int | None:
    inode = socket_inode(server_port, client_port)
    if inode is None:
        return None
    wanted = f"socket:[{inode}]"
    for pid in candidates:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) == wanted:
                        return pid
    return None


def workers_of(server: server_process.ServerProcess) -> list[int]:
    return [p.pid for p in descendants(server.process.pid) if "spawn_main" in p.cmdline]


# --- subscribers -----------------------------------------------------------------------------------


@dataclass
class Received:
    entity_id: str
    cursor: str
    at: float  # time.monotonic()


@dataclass
class Subscriber:
    """One client of ``auditEventAdded``, read by a thread of its own; it resumes with its last
    cursor when its connection ends, as the graphql-ws client's retry would."""

    url: str
    token: str
    socket: Socket
    worker: int
    received: list[Received] = field(default_factory=list)
    closes: list[int] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def ids(self) -> list[str]:
        return [each.entity_id for each in self.received]

    def start(self) -> None:
        self.thread = threading.Thread(target=self._read, name=f"subscriber-{self.worker}", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stop.is_set():
            try:
                message = self.socket.receive(timeout=0.2)
            except TimeoutError:
                continue
            except ConnectionClosed as closed:
                self.closes.append(closed.rcvd.code if closed.rcvd is not None else 1006)
                self.socket = self._resume()
                continue
            if message.get("type") == "next" and message.get("id") == "a" and "data" in message["payload"]:
                change = message["payload"]["data"]["auditEventAdded"]
                self.received.append(Received(change["event"]["entityId"], change["cursor"], time.monotonic()))
            else:
                self.problems.append(message)

    def _resume(self) -> Socket:
        after = self.received[-1].cursor if self.received else None
        for _attempt in range(50):
            try:
                resumed = subscribe(self.url, self.token, after)
            except (OSError, ConnectionClosed, TimeoutError):
                time.sleep(0.1)
                continue
            return resumed
        raise AssertionError("could not reconnect to the server")

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=10)
        with contextlib.suppress(Exception):
            self.socket.close()


def subscribe(url: str, token: str, after: str | None = None) -> Socket:
    ws = open_socket(url)
    ack = ws.init(bearer(token))
    assert ack == {"type": "connection_ack"}, ack
    ws.subscribe("a", AUDIT, {"after": after} if after else None)
    return ws


def subscribers_on_each_worker(server: server_process.ServerProcess, token: str) -> list[Subscriber]:
    """``PER_WORKER`` subscribers on each worker: sockets opened one by one, each kept or closed
    by the worker that accepted it."""
    workers = workers_of(server)
    assert len(workers) == WORKERS, workers
    kept: dict[int, list[Subscriber]] = {pid: [] for pid in workers}
    for _attempt in range(60):
        if all(len(each) == PER_WORKER for each in kept.values()):
            break
        ws = subscribe(server.url, token)
        client_port = ws.ws.socket.getsockname()[1]
        pid = serving_pid(workers, server.port, client_port)
        if pid is None or len(kept[pid]) == PER_WORKER:
            ws.close()
            continue
        kept[pid].append(Subscriber(server.url, token, ws, pid))
    found = [each for group in kept.values() for each in group]
    if len(found) != WORKERS * PER_WORKER:
        for each in found:
            each.socket.close()
        raise AssertionError(
            f"the kernel kept giving connections to one worker: { {k: len(v) for k, v in kept.items()} }"
        )
    return found


# --- writes ------------------------------------------------------------------------------------------


@dataclass
class Writer:
    """Creates a department every ``WRITE_EVERY`` seconds until stopped (each one audit event)."""

    table: Table
    written: list[tuple[str, float]] = field(default_factory=list)  # (dept id, time.monotonic())
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._write, name="writer", daemon=True)
        self.thread.start()

    def _write(self) -> None:
        n = 0
        while not self.stop.is_set():
            department = run(departments.create_department(self.table, name=f"Takeover {n}"))
            self.written.append((department.dept_id, time.monotonic()))
            n += 1
            time.sleep(WRITE_EVERY)

    def finish(self) -> list[str]:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=30)
        return [dept_id for dept_id, _at in self.written]


def wait_for(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds} s"
        time.sleep(0.02)


# --- the test -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    table: Table
    tenant: Table
    admin: Employee


@contextlib.contextmanager
def own_organisation(client: DynamoDBClient, dynamo: AsyncDynamo, prefix: str, name: str) -> Iterator[World]:
    """A table of the test's own, with its stream (no other suite's writes to read past), and
    one organisation in it; the table is dropped after."""
    table_name = f"{prefix}-{ids.new_id().lower()}"
    provisioned(client, dynamo, table_name)
    platform = Table(dynamo, table_name, PlatformScope(), retry=TEST_RETRY)
    domain = unique_domain()
    org, admin = run(
        organizations.create_organization(
            platform,
            name=name,
            plan=Plan.PRO,
            email_domains=[domain],
            admin_email=f"admin@{domain}",
            admin_first_name="Ada",
            admin_last_name="Admin",
        )
    )
    try:
        yield World(platform, platform.with_scope(TenantScope(org.org_id, admin.emp_id)), admin)
    finally:
        drop_table(client, table_name)


@pytest.fixture
def world(client: DynamoDBClient, dynamo: AsyncDynamo) -> Iterator[World]:
    with own_organisation(client, dynamo, "hr-lease", "Lease Co") as made:
        yield made


def lease_of(world: World, supervisor: int) -> Lease:
    tag = owner_tag(supervisor)
    assert tag is not None
    return Lease(world.table, group_name(socket.gethostname(), tag), "the test", LEASE_SECONDS)


def holder_pid(lease: FeedLease | None) -> int | None:
    return None if lease is None else int(lease.holder.split("-")[0])


def test_run__the_reader_s_worker_killed__the_lease_taken_over__no_event_lost(
    dynamodb_endpoint: str, world: World, api_settings: ApiSettings
) -> None:
    env = {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": world.table.name,
        "HR_ENV": "test",
        "ALLOWED_HOSTS": "127.0.0.1",
        "JWT_SECRET": TEST_SECRET,
        "WORKERS": str(WORKERS),
        "FEED_LEASE_SECONDS": str(LEASE_SECONDS),
        "FEED_POLL_SECONDS": "0.05",
        "SUBSCRIPTION_QUEUE_EVENTS": str(QUEUE_EVENTS),
        "LOG_FORMAT": "json",
        "METRICS_PORT": "",
    }
    token = issue_token(
        api_settings, subject=world.admin.emp_id, org_id=world.admin.org_id, role=world.admin.role.value
    )
    writer = Writer(world.tenant)
    subscribers: list[Subscriber] = []
    with server_process.running(env, free_port()) as server:
        lease = lease_of(world, server.process.pid)
        wait_for(lambda: holder_pid(run(lease.current())) in workers_of(server), 60, "a worker taking the lease")
        before = run(lease.current())
        assert before is not None
        reader = holder_pid(before)
        try:
            subscribers = subscribers_on_each_worker(server, token)
            for each in subscribers:
                each.start()
            # Every subscription is live once it has an event: those it gets are from then on.
            warm_up: list[str] = []
            while not all(each.received for each in subscribers):
                assert len(warm_up) < 100, "the subscriptions got no event"
                warm_up.append(run(departments.create_department(world.tenant, name=f"Warm-up {len(warm_up)}")).dept_id)
                time.sleep(0.2)
            wait_for(lambda: all(each.ids()[-1:] == warm_up[-1:] for each in subscribers), 20, "the warm-up delivered")
            first = {id(each): len(each.received) for each in subscribers}

            writer.start()
            time.sleep(1.0)
            killed_at, killed_wall = time.monotonic(), datetime.now(UTC)
            assert reader is not None
            os.kill(reader, signal.SIGKILL)
            wait_for(
                lambda: (found := run(lease.current())) is not None and found.generation != before.generation,
                30,
                "a takeover",
            )
            taken_at = time.monotonic()
            after = run(lease.current())
            assert after is not None
            new_reader = holder_pid(after)
            wait_for(
                lambda: len(set(workers_of(server)) - {reader}) == WORKERS, 60, "a worker in the killed one's place"
            )
            restarted = next(iter(set(workers_of(server)) - workers_of_pids(subscribers)))
            time.sleep(2.0)  # writes under the new reader, with the new worker following it
        finally:
            written = writer.finish()
        try:
            last = written[-1]
            wait_for(lambda: all(last in each.ids() for each in subscribers), 30, "the last event delivered to all")
            time.sleep(0.5)  # anything delivered twice would come now
            final = run(lease.current())
        finally:
            for each in subscribers:
                each.close()
        output = server.output()

    # One live worker took the lease, one generation on, and kept it; the other only follows.
    [survivor] = workers_of_pids(subscribers) - {reader}
    assert new_reader in {survivor, restarted}
    assert after.generation == before.generation + 1
    assert final is not None and holder_pid(final) == new_reader and final.generation == after.generation
    readers = [json.loads(line)["pid"] for line in output.splitlines() if "reads the stream" in line]
    assert readers == [reader, new_reader], readers

    on_survivor = [each for each in subscribers if each.worker == survivor]
    on_killed = [each for each in subscribers if each.worker == reader]
    assert len(on_survivor) == len(on_killed) == PER_WORKER
    for each in subscribers:
        assert each.problems == []
        assert each.ids()[first[id(each)] :] == written  # every event, once, in order
    assert [each.closes for each in on_survivor] == [[]] * PER_WORKER  # none closed, SLOW (4413) included
    assert all(each.closes == [1006] for each in on_killed)  # resumed once with ``after``

    during = [(dept_id, at) for dept_id, at in writer.written if killed_at <= at <= taken_at]
    delays = [
        received.at - at
        for each in on_survivor
        for received in each.received
        for dept_id, at in during
        if received.entity_id == dept_id
    ]
    print(
        f"\nreader worker {reader} killed (FEED_LEASE_SECONDS={LEASE_SECONDS:.0f}, generation {before.generation}); "
        f"worker {new_reader} ({'the survivor' if new_reader == survivor else 'started in its place'}) "
        f"took the lease {taken_at - killed_at:.2f} s later "
        f"(the lease item's takenAt +{(after.taken_at - killed_wall).total_seconds():.2f} s); "
        f"{len(written)} events written, {len(during)} of them during the takeover (delivered on the survivor "
        f"{min(delays):.2f}-{max(delays):.2f} s after their write); every event received exactly once, in order, "
        f"by the {len(on_survivor)} subscribers on the survivor and the {len(on_killed)} resumed from the killed "
        f"worker; worker {restarted} started in the killed one's place"
    )


def workers_of_pids(subscribers: list[Subscriber]) -> set[int]:
    return {each.worker for each in subscribers}
