"""``python server.py restore --org ID (FILE | --from-table NAME)`` as a subprocess."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from datastore.config import DatastoreSettings
from datastore.kinds import layout
from datastore.kinds.entities import Employee, EmployeeStatus, OrganizationStatus, Role
from datastore.lifecycle import erasure, trail
from datastore.table.pagination import PageRequest
from datastore.tenancy import keys
from datastore.tenants import departments, employees
from datastore.values import ids
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.datastore.lifecycle.support import empty_table, exported, fingerprint, item_lines, snapshot
from tests.graphql_api.fixtures import Api
from tests.server_commands import ROOT, server_command

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from datastore.aws.client import AsyncDynamo


def test_export_then_restore__into_an_empty_table__the_same_lines(
    tenant: Tenant, client: DynamoDBClient, dynamo: AsyncDynamo, settings: DatastoreSettings, tmp_path: Path
) -> None:
    assert settings.endpoint_url is not None
    tenant.employee(tenant.department())
    path = tmp_path / "org.jsonl.gz"
    assert (
        server_command(settings.endpoint_url, tenant.table.name, "export", "--org", tenant.org_id, str(path)).returncode
        == 0
    )
    target = empty_table(client, dynamo)

    result = server_command(settings.endpoint_url, target.name, "restore", "--org", tenant.org_id, str(path))

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"restored organisation {tenant.org_id} from file org.jsonl.gz")
    assert "0 counters repaired" in result.stdout
    # The command's export wrote its audit event after the file: the file's lines come back.
    assert item_lines(exported(target, tenant.org_id)) == item_lines([line for line in _lines(path)])


def test_restore__from_table(
    tenant: Tenant, client: DynamoDBClient, dynamo: AsyncDynamo, settings: DatastoreSettings
) -> None:
    assert settings.endpoint_url is not None
    before = snapshot(client, dynamo, tenant.table, tenant.org_id)
    run(departments.create_department(tenant.table, name="Later"))

    result = server_command(
        settings.endpoint_url, tenant.table.name, "restore", "--org", tenant.org_id, "--from-table", before.name,
        "--drain-seconds", "0",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert f"from table {before.name}" in result.stdout
    assert item_lines(exported(tenant.table, tenant.org_id)) == item_lines(exported(before, tenant.org_id))


def test_restore__neither_or_both_sources__exit_2(tenant: Tenant, settings: DatastoreSettings, tmp_path: Path) -> None:
    assert settings.endpoint_url is not None
    neither = server_command(settings.endpoint_url, tenant.table.name, "restore", "--org", tenant.org_id)
    missing = server_command(settings.endpoint_url, tenant.table.name, "restore", "--org", tenant.org_id, "nope.gz")

    assert neither.returncode == 2 and "give either FILE" in neither.stderr
    assert missing.returncode == 2 and "no such file" in missing.stderr


def _lines(path: Path) -> list[bytes]:
    return gzip.decompress(path.read_bytes()).splitlines(keepends=True)


# --- erasures hold, whatever happens to the restore --------------------------------------------

ME = "query { me { id email } }"


def _person(tenant: Tenant) -> Employee:
    unique = ids.new_id().lower()
    return run(
        employees.create_employee(
            tenant.table,
            email=tenant.email(f"zelda.{unique}"),
            first_name="Zelda",
            last_name=f"Quixotic{unique[-6:]}",
            department_id=tenant.department().dept_id,
            role=Role.EMPLOYEE,
        )
    )


def _erase(tenant: Tenant, person: Employee) -> None:
    run(employees.terminate_employee(tenant.table, person.emp_id))
    run(erasure.erase_person(tenant.table, person.emp_id))


def _killed_after(settings: DatastoreSettings, tenant: Tenant, path: Path, partition: str) -> None:
    """``server.py restore`` run until it has replaced ``partition``, then SIGKILLed there."""
    assert settings.endpoint_url is not None
    env = {
        **os.environ,
        "DYNAMODB_ENDPOINT": settings.endpoint_url,
        "HR_TABLE_NAME": tenant.table.name,
        "HR_TEST_RESTORE_PAUSE_AFTER": partition,
    }
    command = [sys.executable, "server.py", "restore", "--org", tenant.org_id, str(path), "--drain-seconds", "0"]
    with subprocess.Popen(
        [*command, "--quiet"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        process.send_signal(signal.SIGKILL)
        _out, err = process.communicate(timeout=30)
    assert line.strip() == f"restore paused after {partition}", (line, err)
    assert process.returncode == -signal.SIGKILL


def _assert_erased(tenant: Tenant, person: Employee, api: Api, token: str) -> None:
    found = run(employees.get_employee(tenant.table, person.emp_id, consistent=True))
    assert found is not None and found.erased_at is not None
    assert (found.email, found.first_name, found.last_name, found.status) == ("", "", "", EmployeeStatus.INACTIVE)
    text = b"".join(exported(tenant.table, tenant.org_id)).decode().lower()
    assert person.email not in text and person.last_name.lower() not in text
    assert run(tenant.table.get(layout.EMAIL_POINTER.key_at(tenant.org_id, person.email), consistent=True)) is None
    refused = api.as_(tenant.admin).with_token(token).query(ME)
    assert refused.get("data") is None and refused["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


def test_restore__killed_after_rewriting_an_erased_persons_item__run_again__the_person_stays_erased(
    tenant: Tenant, settings: DatastoreSettings, tmp_path: Path, api: Api
) -> None:
    assert settings.endpoint_url is not None
    person = _person(tenant)
    token = api.token(person)
    assert api.as_(person).data(ME)["me"]["email"] == person.email
    path = tmp_path / "acme.jsonl.gz"
    command = ("--org", tenant.org_id)
    assert server_command(settings.endpoint_url, tenant.table.name, "export", *command, str(path)).returncode == 0
    _erase(tenant, person)

    # Killed once the root partition (the person's item among it) was rewritten from the file.
    _killed_after(settings, tenant, path, keys.org_pk(tenant.org_id))
    assert _status(tenant) is OrganizationStatus.RESTORING
    again = server_command(
        settings.endpoint_url, tenant.table.name, "restore", *command, str(path), "--drain-seconds", "0"
    )
    twice = server_command(
        settings.endpoint_url, tenant.table.name, "restore", *command, str(path), "--drain-seconds", "0"
    )

    assert again.returncode == 0, again.stderr
    assert twice.returncode == 0, twice.stderr
    assert _status(tenant) is OrganizationStatus.ACTIVE
    _assert_erased(tenant, person, api, token)


def test_restore__an_erasure_of_an_earlier_release__killed_and_run_again__the_person_stays_erased(
    tenant: Tenant, client: DynamoDBClient, settings: DatastoreSettings, tmp_path: Path, api: Api
) -> None:
    """A tombstone written before erasure records existed: the restore records it first."""
    assert settings.endpoint_url is not None
    person = _person(tenant)
    token = api.token(person)
    path = tmp_path / "acme.jsonl.gz"
    assert (
        server_command(settings.endpoint_url, tenant.table.name, "export", "--org", tenant.org_id, str(path)).returncode
        == 0
    )
    _erase(tenant, person)
    # As an earlier release erased: the tombstone, and no record of it.
    client.delete_item(
        TableName=tenant.table.name, Key=layout.ERASURE_RECORD.key_at(tenant.org_id, person.emp_id).wire()
    )

    _killed_after(settings, tenant, path, keys.org_pk(tenant.org_id))
    again = server_command(
        settings.endpoint_url, tenant.table.name, "restore", "--org", tenant.org_id, str(path), "--drain-seconds", "0"
    )

    assert again.returncode == 0, again.stderr
    _assert_erased(tenant, person, api, token)


def test_restore__a_file_with_an_item_in_another_organisations_partition__exit_2_nothing_written(
    tenant: Tenant, make_tenant: TenantFactory, settings: DatastoreSettings, tmp_path: Path
) -> None:
    assert settings.endpoint_url is not None
    person = _person(tenant)
    other = make_tenant("Other")
    path = tmp_path / "acme.jsonl.gz"
    assert (
        server_command(settings.endpoint_url, tenant.table.name, "export", "--org", tenant.org_id, str(path)).returncode
        == 0
    )
    _erase(tenant, person)
    # One department line moved into the other organisation's root: the counts still add up.
    lines = _lines(path)
    at = next(n for n, line in enumerate(lines) if b'"kind":"Department"' in line)
    record = json.loads(lines[at])
    record["item"]["PK"]["S"] = keys.org_pk(other.org_id)
    lines[at] = json.dumps(record, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(gzip.compress(b"".join(lines)))
    ours, theirs = fingerprint(tenant.table, tenant.org_id), fingerprint(tenant.table, other.org_id)

    result = server_command(
        settings.endpoint_url, tenant.table.name, "restore", "--org", tenant.org_id, str(path), "--drain-seconds", "0"
    )

    assert result.returncode == 2, result.stderr
    assert f"outside organisation {tenant.org_id}" in result.stderr and "nothing was written" in result.stderr
    assert "Traceback" not in result.stderr and "ScopeViolation" not in result.stderr
    assert fingerprint(tenant.table, tenant.org_id) == ours
    assert fingerprint(tenant.table, other.org_id) == theirs
    assert _status(tenant) is OrganizationStatus.ACTIVE


def _status(tenant: Tenant) -> OrganizationStatus:
    item = run(tenant.table.get(layout.ORGANIZATION.key_at(tenant.org_id), consistent=True))
    assert item is not None
    return layout.ORGANIZATION.read(item).status


def test_restore__after_an_offboarding__the_trail_says_exported_closed_and_restored(
    tenant: Tenant, settings: DatastoreSettings, tmp_path: Path
) -> None:
    assert settings.endpoint_url is not None
    path = tmp_path / "acme.jsonl.gz"

    def command(*args: str) -> None:
        result = server_command(settings.endpoint_url or "", tenant.table.name, *args, "--org", tenant.org_id)
        assert result.returncode == 0, result.stderr

    command("export", str(path))
    command("offboard", "--grace-days", "0", "--yes")
    command("restore", str(path), "--drain-seconds", "0")
    command("restore", str(path), "--drain-seconds", "0")

    events = run(audit.list_audit_events(tenant.table, PageRequest(first=100))).items
    lifecycle = [(e.action, e.actor_id) for e in sorted(events, key=lambda e: e.event_id) if e.action in trail.ACTIONS]
    assert lifecycle == [
        ("organization.export", None),
        ("organization.close", "operator"),
        ("organization.restore", "operator"),
        ("organization.restore", "operator"),
    ]
