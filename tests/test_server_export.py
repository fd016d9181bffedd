"""``python server.py export --org ID FILE [--csv FILE]`` as a subprocess against DynamoDB Local."""

from __future__ import annotations

import re
from pathlib import Path

from datastore.config import DatastoreSettings
from datastore.kinds.entities import Role
from datastore.lifecycle import export_format
from datastore.table.pagination import PageRequest
from datastore.tenants import employees
from datastore.values import ids
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import Tenant
from tests.server_commands import server_command


def test_export__writes_a_complete_file__and_a_neutralised_csv(
    tenant: Tenant, settings: DatastoreSettings, tmp_path: Path
) -> None:
    assert settings.endpoint_url is not None
    run(
        employees.create_employee(
            tenant.table,
            email=tenant.email("mallory"),
            first_name='=HYPERLINK("http://evil.example")',
            last_name="-Mallory",
            department_id=None,
            role=Role.EMPLOYEE,
        )
    )
    target, csv = tmp_path / "acme.jsonl.gz", tmp_path / "people.csv"

    result = server_command(
        settings.endpoint_url, tenant.table.name, "export", "--org", tenant.org_id, str(target), "--csv", str(csv)
    )

    assert result.returncode == 0, result.stderr
    with target.open("rb") as stream:
        header, tally = export_format.check(stream)
    assert header.org_id == tenant.org_id
    assert f"exported {tally.items} items of {tenant.org_id}" in result.stdout
    # What this run used: the walk's reads and the audit event's write.
    figures = re.search(r"in [\d.]+ s: (\d+) DynamoDB calls, ([\d.]+) RCU, ([\d.]+) WCU", result.stdout)
    assert figures is not None, result.stdout
    assert int(figures[1]) >= 3 and float(figures[2]) > 0 and float(figures[3]) > 0
    assert "2 employees to" in result.stdout
    assert not (tmp_path / "acme.jsonl.gz.part").exists()
    rows = csv.read_text().splitlines()
    assert any("'=HYPERLINK" in row and ",'-Mallory," in row for row in rows)
    [latest] = run(audit.list_audit_events(tenant.table, PageRequest(first=1))).items
    assert (latest.action, latest.actor_id) == ("organization.export", None)


def test_export__no_such_organisation__exit_2_and_no_file(
    tenant: Tenant, settings: DatastoreSettings, tmp_path: Path
) -> None:
    assert settings.endpoint_url is not None
    target = tmp_path / "none.jsonl.gz"

    result = server_command(settings.endpoint_url, tenant.table.name, "export", "--org", ids.new_id(), str(target))

    assert result.returncode == 2
    assert "error: no organisation has the id" in result.stderr
    assert not target.exists() and not (tmp_path / "none.jsonl.gz.part").exists()
