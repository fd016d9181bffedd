"""The graphql-ws client (npm's, on Node's ws) subscribing to the server, as a front end would.

A manager's app subscribes to one job's applications with the token in connection_init's
payload; a review made with the setApplicationStatus mutation over HTTP arrives as the
protocol's ``next``; every frame both ways is kept (the transcript is printed, and the
delivery time from the mutation's answer to the client's receipt, which is a figure, not an
assertion: bench/ holds figures). An employee of another department subscribing to the same
job is refused FORBIDDEN by the same rule as the query, and an employee of another
organisation finds no such job.
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

from datastore import applications, departments, jobs
from datastore.entities import Role
from graphql_api.schema import ids
from tests.conftest import TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.frontend.tools import GRAPHQL_WS, graphql_ws_modules

# The live server of the subscription suites (its own change feed on the session's table).
# The live server's fixtures, its streamed table and its client as ``http`` among them.
from tests.graphql_api.subscriptions.conftest import (  # noqa: F401
    http,
    live_app,
    live_http,
    live_url,
    subscribed,
    table_name,
)

NODE = shutil.which("node")
REVIEWS = """subscription Reviews($job: ID!) {
  applicationChanged(jobPostingId: $job) { cursor action application { status employee { email } } }
}"""
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
    sales = departments.create_department(tenant.table, name="Sales", manager_id=manager.emp_id)
    departments.create_department(tenant.table, name="Research", manager_id=other_manager.emp_id)
    applicant = tenant.employee()
    job = jobs.publish_job(
        tenant.table, jobs.create_job(tenant.table, department_id=sales.dept_id, title="Engineer").job_id
    )
    application = applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id)
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
    job = jobs.create_job(theirs.table, department_id=department.dept_id, title="Theirs")
    client = NodeClient(
        work, live_url, api.token(ours.admin), REVIEWS, {"job": ids.encode("JobPosting", job.job_id)}, 1
    )
    clients.append(client)
    refused = client.until("error")
    assert [error["extensions"]["code"] for error in refused["error"]] == ["NOT_FOUND"]
