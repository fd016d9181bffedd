"""A session's subscription re-sent without ``after`` on another process resumes where it got to.

``server.py run`` as operators run it, on the subscription suites' streamed table: with
WORKERS=2, a socket closed by its client on one worker and the same subscribe payload sent
on a new connection that the kernel gave the other worker; and a server stopped by SIGTERM
(1001) and the payload sent to the server started after it. What was written in the gap
arrives on the new connection, every event once, in order, then the live ones
(graphql_api/subscriptions/resumes.py, datastore/signin/resume_points.py). One process's memory
alone: tests/graphql_api/subscriptions/test_resumes.py.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

from datastore.dev.local import free_port
from datastore.kinds.entities import Session
from datastore.signin import resume_points
from datastore.tenants import departments
from datastore.values import items
from graphql_api.settings.api import ApiSettings
from tests import server_process
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.subscriptions.conftest import signed_in
from tests.graphql_api.subscriptions.ws import AUDIT, Socket, bearer, open_socket
from tests.test_live_workers import serving_pid, workers_of

TOPIC = "Subscription.auditEventAdded"


def environment(dynamodb_endpoint: str, table_name: str, **more: str) -> dict[str, str]:
    return {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": table_name,
        "HR_ENV": "test",
        "ALLOWED_HOSTS": "127.0.0.1",
        "JWT_SECRET": TEST_SECRET,
        "FEED_LEASE_SECONDS": "3",
        "FEED_POLL_SECONDS": "0.05",
        "METRICS_PORT": "",
        # No ping while a test waits for an event: each answered ping would restart its wait.
        "SUBSCRIPTION_KEEPALIVE_SECONDS": "300",
        **more,
    }


def connected(url: str, token: str) -> Socket:
    socket = open_socket(url)
    assert socket.init(bearer(token)) == {"type": "connection_ack"}
    return socket


def entity_of(socket: Socket, operation_id: str = "1", timeout: float = 20) -> str:
    message = socket.next_of(operation_id, timeout)
    assert message["type"] == "next", message
    entity: str = message["payload"]["data"]["auditEventAdded"]["event"]["entityId"]
    return entity


def live(socket: Socket, tenant: Tenant) -> None:
    """Subscribe and write until an event arrives, then read to the last one written: the
    subscription has been sent everything written so far (it takes events from when it starts)."""
    socket.subscribe("1", AUDIT)
    written: list[str] = []
    for attempt in range(40):
        written.append(run(departments.create_department(tenant.table, name=f"Warm-up {attempt}")).dept_id)
        try:
            received = entity_of(socket, timeout=1)
        except TimeoutError:
            continue
        while received != written[-1]:
            received = entity_of(socket)
        return
    raise AssertionError("the subscription got no event")


def saved_point(tenant: Tenant, session: Session) -> bool:
    name = resume_points.subscription_hash(TOPIC)
    return run(resume_points.find(tenant.table, tenant.admin.emp_id, session.session_id, name, items.now())) is not None


def eventually(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def on_worker(server: server_process.ServerProcess, token: str, wanted: Callable[[int], bool]) -> tuple[Socket, int]:
    """A connection the kernel gave a worker ``wanted`` accepts (others are closed unused)."""
    workers = workers_of(server)
    for _attempt in range(60):
        socket = connected(server.url, token)
        pid = serving_pid(workers, server.port, socket.ws.socket.getsockname()[1])
        if pid is not None and wanted(pid):
            return socket, pid
        socket.close()
    raise AssertionError(f"the kernel never gave the wanted worker a connection: {workers}")


def resumed(socket: Socket, tenant: Tenant, missed: list[str]) -> list[Any]:
    """Re-send the first payload (no ``after``); what arrives: the missed events, then a live one."""
    socket.subscribe("1", AUDIT)
    received = [entity_of(socket) for _ in missed]
    later = run(departments.create_department(tenant.table, name="Later")).dept_id
    return [*received, entity_of(socket) == later]


def test_closed_on_one_worker__resent_on_the_other__every_gap_event_once_in_order(
    dynamodb_endpoint: str, table_name: str, api_settings: ApiSettings, make_tenant: TenantFactory
) -> None:
    tenant = make_tenant("Resume Across Workers")
    token, session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=600)
    with server_process.running(environment(dynamodb_endpoint, table_name, WORKERS="2"), free_port()) as server:
        assert eventually(lambda: len(workers_of(server)) == 2, 60), "two workers did not start"
        first, first_worker = on_worker(server, token, lambda _pid: True)
        live(first, tenant)
        first.close()  # the client's own close: the worker saves where it got to when it notices
        saved = eventually(lambda: saved_point(tenant, session), 10)
        missed = [run(departments.create_department(tenant.table, name=f"Missed {n}")).dept_id for n in range(3)]

        second, second_worker = on_worker(server, token, lambda pid: pid != first_worker)
        try:
            assert resumed(second, tenant, missed) == [*missed, True]
        finally:
            second.close()
    assert second_worker != first_worker
    assert saved


def test_server_stopped__1001__its_point_saved__the_next_server_resumes(
    dynamodb_endpoint: str, table_name: str, api_settings: ApiSettings, make_tenant: TenantFactory
) -> None:
    tenant = make_tenant("Resume Across Restarts")
    token, session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=600)
    env = environment(dynamodb_endpoint, table_name)
    server = server_process.start(env, free_port())
    try:
        first = connected(server.url, token)
        live(first, tenant)
        server.process.send_signal(signal.SIGTERM)
        assert first.closed_with(timeout=30) == (1001, "Going away: the server is stopping, reconnect")
        # Read when the client reads the close frame, as a client reconnecting at once would.
        saved_by_the_close_frame = saved_point(tenant, session)
        assert server.stop(timeout=60) == 0
    finally:
        server.stop(signal.SIGKILL)
    missed = [run(departments.create_department(tenant.table, name=f"Missed {n}")).dept_id for n in range(3)]
    with server_process.running(env, free_port()) as restarted:
        second = connected(restarted.url, token)
        try:
            assert resumed(second, tenant, missed) == [*missed, True]
        finally:
            second.close()
    assert saved_by_the_close_frame
