"""Apollo Client's HttpLink subscribing over HTTP multipart (Apollo's subscriptionSpec 1.0), in Node.

A manager's app subscribes to one job's applications with Apollo Client 4's own HttpLink, no
WebSocket: a review made with setApplicationStatus arrives as the next result, and the
employee the application is of is read with the field rules of queries.
"""

from __future__ import annotations

import json
import shutil
import subprocess
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
from tests.graphql_api.frontend.tools import APOLLO_CLIENT, apollo_client_modules

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


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert NODE is not None, "node is needed for the Apollo Client test; install Node.js and npm"
    folder = tmp_path_factory.mktemp("apollo-multipart")
    (folder / "node_modules").symlink_to(apollo_client_modules(), target_is_directory=True)
    shutil.copy(APOLLO_CLIENT / "subscribe.mjs", folder / "subscribe.mjs")
    return folder


def test_apollo_http_link__a_review_arrives_over_multipart(
    work: Path,
    live_url: str,  # noqa: F811
    live_app: Starlette,  # noqa: F811
    api: Api,
    make_tenant: TenantFactory,
) -> None:
    assert NODE is not None
    tenant = make_tenant("Apollo Multipart")
    manager = tenant.employee(role=Role.MANAGER)
    sales = run(departments.create_department(tenant.table, name="Sales", manager_id=manager.emp_id))
    applicant = tenant.employee()
    job = run(
        jobs.publish_job(
            tenant.table, run(jobs.create_job(tenant.table, department_id=sales.dept_id, title="Engineer")).job_id
        )
    )
    application = run(applications.apply_to_job(tenant.table, job.job_id, applicant.emp_id))
    variables = {"job": ids.encode("JobPosting", job.job_id)}
    command = [NODE, "subscribe.mjs", f"{live_url}/graphql", api.token(manager), REVIEWS, json.dumps(variables), "1"]
    process = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        try:
            subscribed(live_app, tenant.org_id, seconds=30)
        except AssertionError:
            process.kill()
            raise AssertionError(str(process.communicate())) from None
        run(
            applications.set_application_status(
                tenant.table, job.job_id, application.app_id, ApplicationStatus.REVIEWING
            )
        )
        written = time.monotonic()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    took = 1000 * (time.monotonic() - written)
    print(f"Apollo Client multipart: the client had the event and exited {took:.0f} ms after the write")
    assert process.returncode == 0, out + err
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert "events" in result, result
    (event,) = result["events"]
    change = event["applicationChanged"]
    assert change["action"] == "application.setStatus"
    assert change["application"]["status"] == "REVIEWING"
    assert change["application"]["employee"]["email"] == applicant.email
