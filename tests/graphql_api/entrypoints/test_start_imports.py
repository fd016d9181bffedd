"""What a serving process imports before its first answer: nothing it does not need for it.

boto3 is the control plane's (creating the table, its stream, STS, Secrets Manager, API
Gateway's management API), email-validator checks addresses a caller sends, and the export's
and the demo sign-in's modules serve their own routes: each is imported where it is first
used, not at start. Each case runs a fresh interpreter, as a uvicorn worker or Lambda's init
does, configured as production is, and reads what it imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from datastore.dev.local import free_port
from datastore.kinds.entities import Employee
from tests.conftest import Tenant
from tests.graphql_api.entrypoints.test_lambda_handler import body_of, graphql_event, token_for
from tests.graphql_api.fixtures import TEST_SECRET, Demo
from tests.server_commands import ROOT

# Packages and modules a serving process answers its first query without.
NOT_AT_START = ("boto3", "s3transfer", "email_validator")
NOT_AT_START_MODULES = (
    "datastore.lifecycle.export",  # GET /export's
    "datastore.dev.demo",  # the development sign-in list's
    "graphql_api.graphiql.sign_in",
)

# Imports the entry module; with an event on stdin, answers it through the Lambda handler first.
# Then the cyclic collector's state: the collections run while the entry module built the heap it
# then froze (the collections run to compile its own source, before its first line, are not its),
# whether it collects, and the frozen heap.
CHILD = """
import gc, json, sys, traceback, typing  # typing: imported by heap.py before it turns collection off
entry_file = sys.argv[1].replace(".", "/") + ".py"
building = []
def count(phase, info):
    if phase == "start" and gc.get_freeze_count() == 0:
        if any(frame.filename.endswith(entry_file) for frame in traceback.extract_stack()):
            building.append(info["generation"])
gc.callbacks.append(count)
entry = __import__(sys.argv[1], fromlist=["_"])
heap = {
    "collections": len(building),
    "collecting": gc.isenabled(),
    "frozen": gc.get_freeze_count(),
}
event = sys.stdin.read()
answer = entry.handler(json.loads(event), None) if event else None
print(json.dumps({"answer": answer, "modules": sorted(sys.modules), "heap": heap}))
"""


def start(module: str, dynamodb_endpoint: str, table_name: str, event: dict[str, Any] | None = None) -> dict[str, Any]:
    """What ``module`` imported in a fresh production process (and its answer to ``event``)."""
    env = {
        **os.environ,
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": table_name,
        "HR_ENV": "production",
        "JWT_SECRET": TEST_SECRET,
        "ALLOWED_HOSTS": "*",
    }
    if module != "graphql_api.entrypoints.asgi":
        env["AWS_LAMBDA_FUNCTION_NAME"] = "hr-api"  # set by Lambda itself
    result = subprocess.run(
        [sys.executable, "-c", CHILD, module],
        cwd=ROOT,
        env=env,
        input="" if event is None else json.dumps(event),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    started: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return started


def loaded_too_soon(modules: list[str]) -> list[str]:
    return [name for name in modules if name.split(".")[0] in NOT_AT_START or name.startswith(NOT_AT_START_MODULES)]


@pytest.mark.parametrize(
    "module",
    ["graphql_api.entrypoints.asgi", "graphql_api.entrypoints.lambda_handler", "graphql_api.entrypoints.lambda_live"],
)
def test_import__serving_entry_point__no_control_plane_nor_unused_routes_modules(
    module: str, dynamodb_endpoint: str, table_name: str
) -> None:
    started = start(module, dynamodb_endpoint, table_name)

    assert module in started["modules"]
    assert loaded_too_soon(started["modules"]) == []


@pytest.mark.parametrize(
    "module",
    ["graphql_api.entrypoints.asgi", "graphql_api.entrypoints.lambda_handler", "graphql_api.entrypoints.lambda_live"],
)
def test_import__serving_entry_point__built_without_a_cyclic_collection_then_frozen(
    module: str, dynamodb_endpoint: str, table_name: str
) -> None:
    """Start-up builds what lives as long as the process: no collection looks for garbage in it
    (entrypoints/heap.py:build_without_collecting); once built it is frozen and collection is on."""
    started = start(module, dynamodb_endpoint, table_name)

    assert started["heap"]["collections"] == 0
    assert started["heap"]["collecting"] is True
    assert started["heap"]["frozen"] > 10_000


def test_handler__first_answer__without_the_control_plane(dynamodb_endpoint: str, table_name: str, demo: Demo) -> None:
    """The first query, bearer token and all, is answered before any of them is imported."""
    alice = demo.person("alice@acme.co")
    event = graphql_event("{ me { email } organization { name } }", token_for(alice))

    started = start("graphql_api.entrypoints.lambda_handler", dynamodb_endpoint, table_name, event)

    assert started["answer"]["statusCode"] == 200
    assert body_of(started["answer"])["data"] == {
        "me": {"email": "alice@acme.co"},
        "organization": {"name": "Acme Corp"},
    }
    assert loaded_too_soon(started["modules"]) == []


# ``server.py run`` in this interpreter; a thread posts ``argv[2]`` (a GraphQL request) to it
# until it answers, then prints the answer and what the process had imported by then.
RUN_CHILD = """
import gc, json, os, runpy, sys, threading, time, traceback, typing, urllib.error, urllib.request
port, request, token = sys.argv[1], sys.argv[2].encode(), sys.argv[3]

def first_answer():
    while True:
        post = urllib.request.Request(
            f"http://127.0.0.1:{port}/graphql", data=request,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(post, timeout=30) as response:
                answer = json.loads(response.read())
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.05)
            continue
        heap = {"collections": len(building),
                "collecting": gc.isenabled(), "frozen": gc.get_freeze_count()}
        started = {"answer": answer, "modules": sorted(sys.modules), "heap": heap}
        print("FIRST ANSWER " + json.dumps(started), flush=True)
        os._exit(0)

building = []
def count(phase, info):
    if phase == "start" and gc.get_freeze_count() == 0:
        if any(frame.filename.endswith("server.py") for frame in traceback.extract_stack()):
            building.append(info["generation"])
gc.callbacks.append(count)
threading.Thread(target=first_answer, daemon=True).start()
sys.argv = ["server.py", "run"]
runpy.run_path("server.py", run_name="__main__")
"""


def run_to_first_answer(
    dynamodb_endpoint: str, table_name: str, caller: Employee, credentials: dict[str, str]
) -> dict[str, Any]:
    """``server.py run`` on ``table_name`` in a fresh process, with the AWS ``credentials`` in its
    environment (and none else): its first answer to ``caller`` and what it had imported by then."""
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update(
        {
            "DYNAMODB_ENDPOINT": dynamodb_endpoint,
            "HR_TABLE_NAME": table_name,
            "HR_ENV": "production",
            "JWT_SECRET": TEST_SECRET,
            "ALLOWED_HOSTS": "*",
            "PORT": str(port),
            "WORKERS": "1",
            "METRICS_PORT": "",
            "DYNAMODB_READ_TIMEOUT_SECONDS": "10",  # a loaded machine's DynamoDB Local
            **credentials,
        }
    )
    request = json.dumps({"query": "{ me { email } }"})
    result = subprocess.run(
        [sys.executable, "-c", RUN_CHILD, str(port), request, token_for(caller)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    # The server's own lines (its log) may come before or after it.
    [line] = [line for line in result.stdout.splitlines() if line.startswith("FIRST ANSWER ")]
    started: dict[str, Any] = json.loads(line.removeprefix("FIRST ANSWER "))
    assert started["answer"]["data"] == {"me": {"email": caller.email}}
    assert "uvicorn" in started["modules"]
    return started


def test_server_run__existing_table__first_answer_without_boto3(
    dynamodb_endpoint: str, streamed_table_name: str, streamed_tenant: Tenant
) -> None:
    """``server.py run`` on a table that exists with its stream and TTL waits for DynamoDB and
    checks the table on the event loop's client: nothing to create or change, so no boto3. A
    local engine is signed with a placeholder: botocore's credential chain is not asked either."""
    started = run_to_first_answer(dynamodb_endpoint, streamed_table_name, streamed_tenant.admin, {})

    assert loaded_too_soon(started["modules"]) == []
    assert "botocore.session" not in started["modules"]


def test_server_run__to_its_first_answer__no_cyclic_collection_then_frozen(
    dynamodb_endpoint: str, streamed_table_name: str, streamed_tenant: Tenant
) -> None:
    """From its first line until its heap is frozen (imports, the table's check, the app) the
    server runs no collection; collection is on again when it answers."""
    started = run_to_first_answer(dynamodb_endpoint, streamed_table_name, streamed_tenant.admin, {})

    assert started["heap"]["collections"] == 0
    assert started["heap"]["collecting"] is True
    assert started["heap"]["frozen"] > 10_000


def test_server_run__key_in_the_environment__first_answer_without_botocores_session(
    dynamodb_endpoint: str, streamed_table_name: str, streamed_tenant: Tenant
) -> None:
    """With the key in the environment (as Lambda gives it), the process signs with it as
    botocore's chain would, without importing botocore's session to find it."""
    key = {"AWS_ACCESS_KEY_ID": "AKIALOCAL", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "token"}
    started = run_to_first_answer(dynamodb_endpoint, streamed_table_name, streamed_tenant.admin, key)

    assert loaded_too_soon(started["modules"]) == []
    assert "botocore.session" not in started["modules"]
