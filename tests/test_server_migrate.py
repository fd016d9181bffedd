"""An upgrade as an operator runs it: ``server.py run`` refuses data of the previous release,
``server.py migrate`` (a real process) brings it to this release's layout, and the API then
answers right. The data is written the way the previous release wrote it (tests/legacy_layout.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from datastore.aws.client import AsyncDynamo
from datastore.config import DatastoreSettings
from datastore.dev.local import free_port
from datastore.kinds import layout
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import LayoutScope
from datastore.upkeep import layout_version, migration
from datastore.values import ids
from graphql_api.auth.tokens import issue_token
from graphql_api.settings import Settings
from tests.blocking import run
from tests.datastore.support import drop_table, write_items
from tests.legacy_layout import (
    LegacyOrganization,
    create_legacy_table,
    layout_1_organization,
    typical_organization,
    unlocked_engine,
)
from tests.server_commands import ROOT, server_command

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

START_TIMEOUT_SECONDS = 90.0


@pytest.fixture
def legacy_table(client: DynamoDBClient) -> Iterator[str]:
    """A table of its own, as the previous release created it, on the session's DynamoDB Local."""
    name = f"hr-upgrade-{ids.new_id().lower()}"
    create_legacy_table(client, name)
    yield name
    drop_table(client, name)


def migrate(settings: DatastoreSettings, table_name: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert settings.endpoint_url is not None
    return server_command(settings.endpoint_url, table_name, "migrate", *args)


def run_env(settings: DatastoreSettings, table_name: str, **extra: str) -> dict[str, str]:
    assert settings.endpoint_url is not None
    env = {**os.environ, "DYNAMODB_ENDPOINT": settings.endpoint_url, "HR_TABLE_NAME": table_name}
    return {**env, "PORT": str(free_port()), **extra}


@contextmanager
def serving(env: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """``server.py run`` with ``env``; yields its URL and its output so far (stdout and stderr)."""
    process = subprocess.Popen(
        [sys.executable, "server.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output: list[str] = []
    url = f"http://127.0.0.1:{env['PORT']}"
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not any(line.startswith("GraphQL on") for line in output):
            line = process.stdout.readline()
            assert line and time.monotonic() < deadline, f"the server did not start: {''.join(output)}"
            output.append(line)
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass  # "GraphQL on" is printed before uvicorn listens
            time.sleep(0.1)
        yield url, output
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # Never leave a server behind; say what it printed instead of a ResourceWarning.
            process.kill()
            process.wait()
            raise AssertionError(f"the server did not stop within 30 s of SIGTERM: {''.join(output)}") from None
        finally:
            if process.stdout is not None:
                process.stdout.close()


def graphql(url: str, token: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    response = httpx.post(
        f"{url}/graphql",
        json={"query": query, "variables": variables or {}},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def admin_token(org: LegacyOrganization) -> str:
    admin = next(employee for employee in org.employees if employee.role == "admin")
    return issue_token(Settings.load().api, subject=admin.emp_id, org_id=org.org_id, role="admin")


DIRECTORY = """query($search: String) { organization {
  byName: employees(orderBy: NAME, first: 100) { edges { node { email } } }
  found: employees(search: $search) { edges { node { email } } }
  emailDomains
  jobPostings { edges { node { title applicationCounts { total applied reviewing rejected accepted withdrawn } } } }
} }"""

CREATE_EMPLOYEE = """mutation($input: CreateEmployeeInput!) {
  createEmployee(input: $input) { employee { email } } }"""


def test_run__previous_releases_data__refused_in_one_line_naming_migrate(
    settings: DatastoreSettings, client: DynamoDBClient, legacy_table: str
) -> None:
    typical_organization("Acme", "acme.example").write(client, legacy_table)

    line = refused_start(settings, legacy_table)

    assert line.startswith(
        f"error: table {legacy_table} holds organisations but no layout version item, so it is taken for layout 0"
    )
    assert "run `python server.py migrate`" in line
    # Refused before anything of the table was changed: the previous release made it without a
    # stream, and it is still without one.
    described = client.describe_table(TableName=legacy_table)["Table"]
    assert not described.get("StreamSpecification", {}).get("StreamEnabled")


def test_layout_1__refused_at_start__migrate_stamps_each_audit_event_with_its_expiry(
    settings: DatastoreSettings, client: DynamoDBClient, dynamo: AsyncDynamo, legacy_table: str
) -> None:
    org_id = "01HZ0000000000000000000001"
    write_items(client, legacy_table, layout_1_organization(org_id, "Acme"))
    run(layout_version.stamp(Table(dynamo, legacy_table, LayoutScope()), 1, over=None))

    line = refused_start(settings, legacy_table)
    assert line.startswith(f"error: table {legacy_table} holds data in layout 1 (")
    assert "run `python server.py migrate`" in line

    assert settings.endpoint_url is not None
    result = server_command(settings.endpoint_url, legacy_table, "migrate", env={"AUDIT_RETENTION_DAYS": "400"})

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == [
        "1 organisation from layout 1 to 2 (0 done by an earlier run): 2 audit events given an expiry",
        f"table {legacy_table} is at layout 2 now",
    ]
    events = client.query(
        TableName=legacy_table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": f"ORG#{org_id}#AUDIT#2024-05"}},
        ConsistentRead=True,
    )["Items"]
    assert len(events) == 2
    for event in events:  # when it happened plus the platform's default, AUDIT_RETENTION_DAYS
        occurred = datetime.fromisoformat(event["occurredAt"]["S"])
        assert event[layout.EXPIRES_AT] == {"N": str(int((occurred + timedelta(days=400)).timestamp()))}


def test_run__serve_unmigrated_data__serves_with_a_warning_and_answers_show_why(
    settings: DatastoreSettings, client: DynamoDBClient, legacy_table: str
) -> None:
    acme = typical_organization("Acme", "acme.example").write(client, legacy_table)

    with serving(run_env(settings, legacy_table, SERVE_UNMIGRATED_DATA="1")) as (url, output):
        warnings = [line for line in output if line.startswith("WARNING: serving table")]
        assert len(warnings) == 1 and "SERVE_UNMIGRATED_DATA is on" in warnings[0]
        data = graphql(url, admin_token(acme), DIRECTORY, {"search": "ng"})

    # What the warning is about: the previous release's data, read by this one, unmigrated.
    assert data["organization"]["byName"]["edges"] == [] and data["organization"]["found"]["edges"] == []
    assert data["organization"]["emailDomains"] == []


def test_migrate__previous_releases_data__api_answers_right_afterwards_and_a_run_again_is_a_no_op(
    settings: DatastoreSettings, client: DynamoDBClient, legacy_table: str
) -> None:
    acme = typical_organization("Acme", "acme.example").write(client, legacy_table)
    globex = typical_organization("Globex", "globex.example", people=3).write(client, legacy_table)

    result = migrate(settings, legacy_table)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # One counter per status a job had applications in: the previous release kept none.
    repaired = sum(len(statuses) for org in (acme, globex) for statuses in org.applications.values())
    # The previous release created the table without a stream: the run turned it on first.
    assert lines[0] == f"table {legacy_table}: turned its stream on (live updates)"
    assert lines[1] == (
        f"2 organisations from layout 0 to 1 (0 done by an earlier run): 11 employees indexed, "
        f"{repaired} counters repaired, 2 organisations given email domains"
    )
    # Layout 0 wrote no audit events; layout 1's step wrote its own (domains given), with their expiry.
    assert lines[-2] == "2 organisations from layout 1 to 2 (0 done by an earlier run): 0 audit events given an expiry"
    assert f"  {acme.org_id} Acme: email domains acme.example" in lines
    assert lines[-1] == f"table {legacy_table} is at layout {layout_version.CURRENT} now"
    assert "migrating: 100%" in result.stderr  # the progress bar

    with serving(run_env(settings, legacy_table)) as (url, output):
        assert not any("WARNING" in line for line in output)
        token = admin_token(acme)
        directory = graphql(url, token, DIRECTORY, {"search": "ng"})["organization"]
        created = graphql(
            url,
            token,
            CREATE_EMPLOYEE,
            {"input": {"email": "new@acme.example", "firstName": "Nia", "lastName": "Ngata"}},
        )
        after = graphql(url, token, DIRECTORY, {"search": "ng"})["organization"]
        globex_view = graphql(url, admin_token(globex), DIRECTORY, {"search": "zo"})["organization"]

    assert sorted(edge["node"]["email"] for edge in directory["byName"]["edges"]) == sorted(
        employee.email for employee in acme.employees
    )
    assert [edge["node"]["email"] for edge in directory["found"]["edges"]] == ["p2@acme.example", "p3@acme.example"]
    assert directory["emailDomains"] == ["acme.example"]
    counts = {edge["node"]["title"]: edge["node"]["applicationCounts"] for edge in directory["jobPostings"]["edges"]}
    assert counts["Engineer"] == {
        "total": 5,
        "applied": 2,
        "reviewing": 1,
        "rejected": 1,
        "accepted": 0,
        "withdrawn": 1,
    }
    assert counts["Seller"]["total"] == counts["Seller"]["accepted"] == 1
    assert counts["Draft"]["total"] == 0
    assert created["createEmployee"]["employee"]["email"] == "new@acme.example"
    assert [edge["node"]["email"] for edge in after["found"]["edges"]] == [
        "p2@acme.example",
        "p3@acme.example",
        "new@acme.example",  # Ngata, after Ng and Ng Li
    ]
    assert [edge["node"]["email"] for edge in globex_view["found"]["edges"]] == ["p0@globex.example"]  # Zoë

    again = migrate(settings, legacy_table)

    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        f"table {legacy_table} is at layout {layout_version.CURRENT} already: nothing to migrate"
    ]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_migrate__stopped_mid_run__run_again_resumes_and_finishes(
    settings: DatastoreSettings, client: DynamoDBClient, dynamo: AsyncDynamo, legacy_table: str, sig: signal.Signals
) -> None:
    orgs = [
        typical_organization(f"Org {index:02d}", f"org{index}.example").write(client, legacy_table)
        for index in range(16)
    ]
    assert settings.endpoint_url is not None
    env = {**os.environ, "DYNAMODB_ENDPOINT": settings.endpoint_url, "HR_TABLE_NAME": legacy_table}
    with default_sigint():
        process = subprocess.Popen(
            [sys.executable, "server.py", "migrate"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    try:
        deadline = time.monotonic() + 120
        while not finished_organizations(client, legacy_table):
            assert process.poll() is None, "the run ended before it could be interrupted"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        process.send_signal(sig)  # SIGKILL: no cleanup at all, what a crash or an OOM kill leaves
    finally:
        _out, stderr = process.communicate(timeout=60)
    if sig == signal.SIGINT:
        assert process.returncode == 2
        assert stderr.splitlines()[-1] == (
            "error: interrupted; the migration stopped: run it again to finish what is left"
        )
    done_before = finished_organizations(client, legacy_table)
    assert 0 < done_before < len(orgs)
    assert run(layout_version.stored_version(Table(dynamo, legacy_table, LayoutScope()))) is None

    result = migrate(settings, legacy_table, "--quiet")

    assert result.returncode == 0, result.stderr
    # The run that finishes the steps turns the stream on (the interrupted one never got there).
    stream, first = result.stdout.splitlines()[:2]
    assert stream == f"table {legacy_table}: turned its stream on (live updates)"
    assert first.startswith(f"16 organisations from layout 0 to 1 ({done_before} done by an earlier run): ")
    assert finished_organizations(client, legacy_table) == len(orgs)
    assert run(layout_version.stored_version(Table(dynamo, legacy_table, LayoutScope()))) == layout_version.CURRENT


def refused_start(settings: DatastoreSettings, table_name: str) -> str:
    """The one line a server started on ``table_name`` says before it exits 2, serving nothing."""
    refused = subprocess.run(
        [sys.executable, "server.py"],
        cwd=ROOT,
        env=run_env(settings, table_name),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 2
    assert "GraphQL on" not in refused.stdout
    [line] = refused.stderr.strip().splitlines()
    return line


@contextmanager
def default_sigint() -> Iterator[None]:
    """A child started here takes Ctrl-C as an operator's terminal gives it, even when this
    process ignores SIGINT (a background job's does, and its children inherit that): a
    handler, unlike an ignored signal, is reset to the default when the child starts."""
    before = signal.getsignal(signal.SIGINT)
    if before is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def finished_organizations(client: DynamoDBClient, table_name: str) -> int:
    """Organisations whose every step to layout 1 is recorded (their progress items)."""
    steps = len(migration.STEPS[1])
    found = client.query(
        TableName=table_name,
        KeyConditionExpression="PK = :pk AND begins_with(SK, :migration)",
        ExpressionAttributeValues={
            ":pk": {"S": keys.LAYOUT_PK},
            ":migration": {"S": layout.MIGRATION_PROGRESS.sort_prefix + "0001#"},
        },
        ConsistentRead=True,
    )["Items"]
    return sum(1 for item in found if len(item.get("stepsDone", {}).get("SS", [])) == steps)


def test_migrate__domain_held_by_another_organisation__exit_1_naming_it(
    settings: DatastoreSettings, client: DynamoDBClient, legacy_table: str
) -> None:
    for name in ("Alpha", "Beta"):  # both had people at shared.example; Alpha, first by name, gets it
        org = LegacyOrganization(name)
        org.employee(f"{name.lower()}@shared.example", name, "Admin", role="admin")
        org.write(client, legacy_table)

    result = migrate(settings, legacy_table, "--quiet")

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    beta = [line for line in lines if " Beta: " in line]
    assert [line.split(": ", 1)[1] for line in beta] == [
        "held by another organisation: shared.example",
        "it owns no email domain now, so createEmployee fails there: run addEmailDomain",
    ]
    assert lines[-1] == f"table {legacy_table} is at layout {layout_version.CURRENT} now"


def test_migrate__data_of_a_later_release__refused_in_one_line(
    settings: DatastoreSettings, dynamo: AsyncDynamo, legacy_table: str
) -> None:
    run(layout_version.stamp(Table(dynamo, legacy_table, LayoutScope()), layout_version.CURRENT + 1, over=None))

    result = migrate(settings, legacy_table)

    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: table {legacy_table} holds data in layout {layout_version.CURRENT + 1}")


@pytest.mark.parametrize("command", ["run", "migrate"])
def test_embedded__previous_releases_engine_still_on_the_data__refused_naming_its_pid(
    tmp_path: Path, command: str
) -> None:
    data_dir = tmp_path / "dynamodb"
    with unlocked_engine(DatastoreSettings.from_env({}).local_cache_dir, data_dir) as engine:
        env = {**os.environ, "DYNAMODB_LOCAL_DATA": str(data_dir), "PORT": str(free_port())}
        env.pop("DYNAMODB_ENDPOINT", None)
        refused = subprocess.run(
            [sys.executable, "server.py", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert engine.poll() is None  # left running, untouched

    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"error: a DynamoDB Local (pid {engine.pid}) is already running on {data_dir}")
