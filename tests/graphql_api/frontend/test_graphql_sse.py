"""graphql-sse's own client, in distinct connections mode, subscribing over Server-Sent Events in Node.

Its transcript (each ``next`` and ``complete`` it parsed) shows the protocol as the library
reads it: an employee's directory subscription gets a hire as a ``next``, and the employee's
termination ends it with a ``next`` carrying FORBIDDEN, then ``complete``, which the client
reports as the subscription's completion. A query through the same client is one ``next``
then ``complete``; a request without a credential is refused before the stream, as HTTP 401.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from datastore.tenants import employees
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.frontend.tools import GRAPHQL_SSE, graphql_sse_modules

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
DIRECTORY = "subscription Directory { employeeChanged { action employee { email } } }"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert NODE is not None, "node is needed for the graphql-sse client test; install Node.js and npm"
    folder = tmp_path_factory.mktemp("graphql-sse")
    (folder / "node_modules").symlink_to(graphql_sse_modules(), target_is_directory=True)
    shutil.copy(GRAPHQL_SSE / "client.mjs", folder / "client.mjs")
    return folder


class Transcript:
    """The client's printed lines, read as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        self.stdout = process.stdout
        self.lines: list[dict[str, Any]] = []

    def until(self, done: str) -> dict[str, Any]:
        """Read lines until one has the key ``done``; that line."""
        while True:
            line = self.stdout.readline()
            assert line, f"the client ended first: {self.lines}"
            self.lines.append(json.loads(line))
            if done in self.lines[-1]:
                return self.lines[-1]

    def messages(self) -> list[str]:
        return [line["message"]["event"] for line in self.lines if "message" in line]


@contextmanager
def client(work: Path, url: str, token: str, query: str, wanted: int = 99) -> Iterator[Transcript]:
    assert NODE is not None
    command = [NODE, "client.mjs", f"{url}/graphql", token, query, "{}", str(wanted)]
    with subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        watchdog = threading.Timer(90, process.kill)  # a client that never hears anything fails the test
        watchdog.start()
        try:
            yield Transcript(process)
        finally:
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)


def test_graphql_sse__a_hire_arrives__termination_completes_it_forbidden(
    work: Path,
    live_url: str,  # noqa: F811
    live_app: Starlette,  # noqa: F811
    api: Api,
    tenant: Tenant,
) -> None:
    subscriber = tenant.employee()
    with client(work, live_url, api.token(subscriber), DIRECTORY) as transcript:
        subscribed(live_app, tenant.org_id, seconds=30)
        hired = tenant.employee()
        written = time.monotonic()
        transcript.until("message")
        print(f"graphql-sse: the hire arrived {1000 * (time.monotonic() - written):.0f} ms after its write")
        run(employees.terminate_employee(tenant.table, subscriber.emp_id))
        completed = transcript.until("completed")["completed"]
    print("graphql-sse transcript:", json.dumps(transcript.lines))
    first, *_, last = completed
    assert first["data"]["employeeChanged"] == {"action": "employee.create", "employee": {"email": hired.email}}
    assert [error["extensions"]["code"] for error in last["errors"]] == ["FORBIDDEN"]
    assert transcript.messages()[0] == "next" and transcript.messages()[-2:] == ["next", "complete"]


def test_graphql_sse__a_query__one_next_then_complete(
    work: Path,
    live_url: str,  # noqa: F811
    api: Api,
    tenant: Tenant,
) -> None:
    with client(work, live_url, api.token(tenant.admin), "{ me { email } }") as transcript:
        (result,) = transcript.until("completed")["completed"]
    assert result["data"] == {"me": {"email": tenant.admin.email}}
    assert transcript.messages() == ["next", "complete"]


def test_graphql_sse__no_credential__refused_401_before_the_stream(
    work: Path,
    live_url: str,  # noqa: F811
) -> None:
    with client(work, live_url, "", DIRECTORY) as transcript:
        refused = transcript.until("error")
    assert refused["status"] == 401 and transcript.messages() == []
