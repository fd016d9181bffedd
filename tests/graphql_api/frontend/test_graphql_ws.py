"""The graphql-ws client (npm's, on Node's ws) subscribing to the server, as a front end would.

A manager's app subscribes to one job's applications with the token in connection_init's
payload; a review made with the setApplicationStatus mutation over HTTP arrives as the
protocol's ``next``; every frame both ways is kept (the transcript is printed, and the
delivery time from the mutation's answer to the client's receipt, which is a figure, not an
assertion: bench/ holds figures). An employee of another department subscribing to the same
job is refused FORBIDDEN by the same rule as the query, and an employee of another
organisation finds no such job.

With graphql-ws's defaults (it retries a closed socket by itself and re-sends the
subscription's first payload, without rewriting ``after``; graphql_ws_client.py): a token of a
sign-in session expiring does not close the socket; a connection closed under it (its
lifetime) reconnects and misses nothing; a connection over the organisation's bound is closed
1013 and retried until there is room.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from datastore.kinds.entities import Role
from datastore.tenants import applications, departments, jobs
from graphql_api.execution import ids
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.frontend.graphql_ws_client import LiveClient, node_work
from tests.graphql_api.frontend.tools import GRAPHQL_WS, graphql_ws_modules

# The live server of the subscription suites (its own change feed on the session's table).
# The live server's fixtures, its streamed table and its client as ``http`` among them.
from tests.graphql_api.subscriptions.conftest import (  # noqa: F401
    bounds,
    http,
    live_app,
    live_http,
    live_url,
    signed_in,
    subscribed,
    table_name,
)

NODE = shutil.which("node")
REVIEWS = """subscription Reviews($job: ID!) {
  applicationChanged(jobPostingId: $job) { cursor action application { status employee { email } } }
}"""
AUDIT = "subscription Audit($after: String) { auditEventAdded(after: $after) { cursor event { entityId } } }"
SET_STATUS = """mutation Review($input: SetApplicationStatusInput!) {
  setApplicationStatus(input: $input) { application { status } }
}"""


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert NODE is not None, "node is needed for the graphql-ws client test; install Node.js and npm"
    folder = tmp_path_factory.mktemp("graphql-ws")
    (folder / "node_modules").symlink_to(graphql_ws_modules(), target_is_directory=True)
    shutil.copy(GRAPHQL_WS / "client.mjs", folder / "client.mjs")
    return folder


class NodeClient:
    """One ``node client.mjs`` process: its printed lines, read as they come, each with its arrival time."""

    def __init__(self, work: Path, base_url: str, token: str, query: str, variables: dict[str, Any], events: int):
        assert NODE is not None
        url = base_url.replace("http://", "ws://") + "/graphql"
        command = [NODE, "client.mjs", url, token, query, json.dumps(variables), str(events)]
        self.process = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[tuple[float, dict[str, Any]]] = []

    def until(self, key: str, seconds: float = 30) -> dict[str, Any]:
        """Read lines until one holding ``key``; that line."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + seconds
        for raw in self.process.stdout:
            line: dict[str, Any] = json.loads(raw)
            self.lines.append((time.monotonic(), line))
            if key in line:
                return line
            assert time.monotonic() < deadline, f"no {key!r} from the client: {self.lines}"
        raise AssertionError(f"the client ended without {key!r}: {self.lines} {self.stderr()}")

    def frames(self) -> list[dict[str, Any]]:
        return [line for _at, line in self.lines if "frame" in line]

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read() if self.process.poll() is not None else ""

    def close(self) -> None:
        self.process.kill()
        self.process.communicate(timeout=10)  # reaps it and closes its pipes


@pytest.fixture
def clients() -> Iterator[list[NodeClient]]:
    started: list[NodeClient] = []
    yield started
    for client in started:
        client.close()


def test_manager_s_app__a_review_arrives_as_next__another_department_forbidden(
    work: Path,
    live_url: str,  # noqa: F811
    live_app: Starlette,  # noqa: F811
    api: Api,
    make_tenant: TenantFactory,
    clients: list[NodeClient],
) -> None:
    tenant = make_tenant("Graphql Ws")
    manager = tenant.employee(role=Role.MANAGER)
    other_manager = tenant.employee(role=Role.MANAGER)
    sales = run(departments.create_department(tenant.table, name="Sales", manager_id=manager.emp_id))
    run(departments.create_department(tenant.table, name="Research", manager_id=other_manager.emp_id))
    applicant = tenant.employee()
    job = run(
        jobs.publish_job(
            tenant.table, run(jobs.create_job(tenant.table, department_id=sales.dept_id, title="Engineer")).job_id
        )
    )
    application = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    job_id = ids.encode("JobPosting", job.job_id)

    token = api.token(manager)
    app = NodeClient(work, live_url, token, REVIEWS, {"job": job_id}, 1)
    clients.append(app)
    subscribed(live_app, tenant.org_id)
    reviewed = api.as_(manager).query(
        SET_STATUS, {"input": {"id": ids.encode("Application", job.job_id, application.app_id), "status": "REVIEWING"}}
    )
    answered = time.monotonic()
    assert reviewed["data"] == {"setApplicationStatus": {"application": {"status": "REVIEWING"}}}, reviewed

    result = app.until("events")
    arrived = next(at for at, line in app.lines if line.get("frame", {}).get("type") == "next")
    (event,) = result["events"]
    change = event["data"]["applicationChanged"]
    assert change["action"] == "application.setStatus"
    assert change["application"] == {"status": "REVIEWING", "employee": {"email": applicant.email}}
    assert change["cursor"]
    frames = app.frames()
    sent = [line["frame"]["type"] for line in frames if line["dir"] == "out"]
    received = [line["frame"]["type"] for line in frames if line["dir"] == "in"]
    assert sent[:2] == ["connection_init", "subscribe"]
    assert received[:2] == ["connection_ack", "next"]
    assert frames[0]["frame"]["payload"] == {"Authorization": f"Bearer {token}"}
    print("graphql-ws session:", *(json.dumps(line) for line in frames), sep="\n  ")
    print(f"delivery: {1000 * (arrived - answered):.0f} ms from the mutation's answer to the client's next")

    outsider = NodeClient(work, live_url, api.token(other_manager), REVIEWS, {"job": job_id}, 1)
    clients.append(outsider)
    refused = outsider.until("error")
    assert [error["extensions"]["code"] for error in refused["error"]] == ["FORBIDDEN"]


def test_another_organisation_s_job__not_found_and_nothing_delivered(
    work: Path,
    live_url: str,  # noqa: F811
    api: Api,
    make_tenant: TenantFactory,
    clients: list[NodeClient],
) -> None:
    ours, theirs = make_tenant("Ws Ours"), make_tenant("Ws Theirs")
    department = theirs.department("Theirs")
    job = run(jobs.create_job(theirs.table, department_id=department.dept_id, title="Theirs"))
    client = NodeClient(
        work, live_url, api.token(ours.admin), REVIEWS, {"job": ids.encode("JobPosting", job.job_id)}, 1
    )
    clients.append(client)
    refused = client.until("error")
    assert [error["extensions"]["code"] for error in refused["error"]] == ["NOT_FOUND"]


@pytest.fixture(scope="module")
def live_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return node_work(tmp_path_factory.mktemp("graphql-ws-live"))


@pytest.fixture
def live_clients() -> Iterator[list[LiveClient]]:
    started: list[LiveClient] = []
    yield started
    for client in started:
        client.close()


def audited(results: list[dict[str, Any]]) -> list[str]:
    return [result["data"]["auditEventAdded"]["event"]["entityId"] for result in results]


def test_token_of_a_session_expires__the_socket_stays__events_go_on(
    live_work: Path,
    live_url: str,  # noqa: F811
    live_app: Starlette,  # noqa: F811
    api_settings: ApiSettings,
    make_tenant: TenantFactory,
    live_clients: list[LiveClient],
) -> None:
    tenant = make_tenant("Ws Token Expiry")
    issued = time.time()
    token, _session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=8)  # Node may take seconds to start
    client = LiveClient(live_work, live_url, {"query": AUDIT}, 1, token=token)
    live_clients.append(client)
    subscribed(live_app, tenant.org_id, seconds=30)
    time.sleep(max(0.0, issued + 10 - time.time()))  # the token expired 2 s ago; the session is signed in
    department = run(departments.create_department(tenant.table, name="After the token"))
    client.until("events", seconds=20)
    assert audited(client.results()) == [department.dept_id]
    client.until_disposed()
    assert [code for code, _reason in client.closes()] == [1000]  # the client's own, once done
    assert len(client.seen("connected")) == 1


def test_connection_closed_under_the_client__it_reconnects__nothing_missed(
    live_work: Path,
    live_url: str,  # noqa: F811
    live_app: Starlette,  # noqa: F811
    api_settings: ApiSettings,
    make_tenant: TenantFactory,
    live_clients: list[LiveClient],
) -> None:
    """Connections closed every 2.5 s (their lifetime, 4408): graphql-ws reconnects after its
    random wait and re-sends the subscription as first sent, without ``after``; the session's
    subscription resumes where it got to, so every department written meanwhile arrives, once."""
    tenant = make_tenant("Ws Reconnect")
    token, _session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=600)
    written: list[str] = []
    with bounds(live_app, subscription_lifetime_seconds=2.5):
        client = LiveClient(live_work, live_url, {"query": AUDIT}, 24, token=token)
        live_clients.append(client)
        subscribed(live_app, tenant.org_id, seconds=30)
        for number in range(24):
            written.append(run(departments.create_department(tenant.table, name=f"Department {number}")).dept_id)
            time.sleep(0.3)
        client.until("events", seconds=60)
        client.until_disposed()
    received = audited(client.results())
    reconnects = [code for code, _reason in client.closes()][:-1]  # the last: the client's own (1000)
    print(f"closes {reconnects}, {len(client.seen('connected'))} connections, {len(received)} events")
    assert reconnects and set(reconnects) == {4408}
    subscribes = [frame for frame in client.sent() if frame["type"] == "subscribe"]
    assert len(subscribes) > 1 and all(frame["payload"] == {"query": AUDIT} for frame in subscribes)
    assert received == written


def test_connections_over_the_organisation_s_bound__1013__retried_until_there_is_room(
    live_work: Path,
    live_url: str,  # noqa: F811
    live_app: Starlette,  # noqa: F811
    api: Api,
    make_tenant: TenantFactory,
    live_clients: list[LiveClient],
) -> None:
    tenant = make_tenant("Ws Caps")
    token = api.token(tenant.admin)
    with bounds(live_app, subscription_connections_per_tenant=1):
        first = LiveClient(live_work, live_url, {"query": AUDIT}, 1, token=token)
        live_clients.append(first)
        subscribed(live_app, tenant.org_id, seconds=30)
        second = LiveClient(live_work, live_url, {"query": AUDIT}, 1, token=token)
        live_clients.append(second)
        [closed] = second.until("closed", seconds=20)[:1]
        assert closed["closed"] == 1013 and "your organisation" in closed["reason"]
        second.until("connecting", count=2, seconds=20)  # graphql-ws tries again by itself
        firsts = set(live_app.state.live.streams.get(tenant.org_id, ()))
        first.close()  # room for one
        # The second's own subscription, not the first's on its way out: it takes what is
        # written from then on, so the write waits for it.
        deadline = time.monotonic() + 30
        while not set(live_app.state.live.streams.get(tenant.org_id, ())) - firsts:
            assert time.monotonic() < deadline, "the second client's subscription did not start"
            time.sleep(0.02)
        department = run(departments.create_department(tenant.table, name="Second in"))
        second.until("events", seconds=30)
    assert audited(second.results()) == [department.dept_id]
    assert second.seen("error") == []
