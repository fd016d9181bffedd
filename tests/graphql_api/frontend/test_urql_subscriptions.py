"""urql subscribing over HTTP with ``fetchSubscriptions: true``, in Node: no WebSocket.

urql's fetchExchange asks for a subscription with ``Accept: text/event-stream,
multipart/mixed``, so it gets Server-Sent Events (graphql-sse's distinct connections mode);
told to ask for ``multipart/mixed`` alone, it gets GraphQL over HTTP's incremental delivery.
A manager's app subscribes to one job's applications: each review made with
setApplicationStatus arrives as the next result, and the employee the application is of is
read with the field rules of queries.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from datastore.kinds.entities import ApplicationStatus, Role
from datastore.tenants import applications, departments, jobs
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.frontend.tools import URQL, urql_modules

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
# urql's own Accept for a subscription (sent when the test gives none), and multipart alone.
STREAMS = {"text/event-stream": "", "multipart/mixed": "multipart/mixed"}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert NODE is not None, "node is needed for the urql test; install Node.js and npm"
    folder = tmp_path_factory.mktemp("urql-subscriptions")
    (folder / "node_modules").symlink_to(urql_modules(), target_is_directory=True)
    shutil.copy(URQL / "subscribe.mjs", folder / "subscribe.mjs")
    return folder


@pytest.mark.parametrize("stream", STREAMS)
def test_urql_fetch_subscriptions__reviews_arrive_live(
    work: Path,
    live_url: str,  # noqa: F811
    live_app: Starlette,  # noqa: F811
    api: Api,
    make_tenant: TenantFactory,
    stream: str,
) -> None:
    assert NODE is not None
    tenant = make_tenant("urql Subscriptions")
    manager = tenant.employee(role=Role.MANAGER)
    sales = run(departments.create_department(tenant.table, name="Sales", manager_id=manager.emp_id))
    applicant = tenant.employee()
    job = run(
        jobs.publish_job(
            tenant.table, run(jobs.create_job(tenant.table, department_id=sales.dept_id, title="Engineer")).job_id
        )
    )
    application = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    variables = json.dumps({"job": ids.encode("JobPosting", job.job_id)})
    command = [NODE, "subscribe.mjs", f"{live_url}/graphql", api.token(manager), REVIEWS, variables, "2"]
    lines: list[dict[str, Any]] = []
    # The context closes the pipes; the watchdog fails a client that never hears anything.
    with subprocess.Popen(
        [*command, STREAMS[stream]], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        watchdog = threading.Timer(90, process.kill)
        watchdog.start()
        try:
            try:
                subscribed(live_app, tenant.org_id, seconds=30)
            except AssertionError:
                process.kill()
                raise AssertionError(str(process.communicate())) from None
            assert process.stdout is not None and process.stderr is not None
            # Each review once the client has the one before: an event carries the application
            # as it is when delivered, so two writes before either delivery would both read REJECTED.
            for heard, status in enumerate((ApplicationStatus.REVIEWING, ApplicationStatus.REJECTED), start=1):
                run(applications.set_application_status(tenant.table, job.job_id, application.app_id, status))
                written = time.monotonic()
                while sum("event" in line for line in lines) < heard:
                    line = process.stdout.readline()
                    assert line, f"the client ended: {lines} {process.stderr.read()}"
                    lines.append(json.loads(line))
                took = 1000 * (time.monotonic() - written)
                print(f"urql over {stream}: {status.value} arrived {took:.0f} ms after its write")
            # The rest through the same reader: communicate() would miss what readline() buffered.
            out = process.stdout.read()
            process.wait(timeout=60)
        finally:
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, lines
    lines += [json.loads(line) for line in out.strip().splitlines()]
    response, result = lines[0], lines[-1]
    assert response["status"] == 200 and response["contentType"].startswith(stream), lines
    assert "events" in result, lines
    changes = [event["applicationChanged"] for event in result["events"]]
    assert [change["application"]["status"] for change in changes] == ["REVIEWING", "REJECTED"]
    assert {change["action"] for change in changes} == {"application.setStatus"}
    assert {change["application"]["employee"]["email"] for change in changes} == {applicant.email}
