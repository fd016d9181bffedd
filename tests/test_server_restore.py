"""``python server.py restore --org ID (FILE | --from-table NAME)`` as a subprocess."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING

from datastore import departments
from datastore.config import DatastoreSettings
from tests.conftest import Tenant
from tests.datastore.lifecycle.support import empty_table, exported, item_lines, snapshot
from tests.server_commands import server_command

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def test_export_then_restore__into_an_empty_table__the_same_lines(
    tenant: Tenant, client: DynamoDBClient, settings: DatastoreSettings, tmp_path: Path
) -> None:
    assert settings.endpoint_url is not None
    tenant.employee(tenant.department())
    path = tmp_path / "org.jsonl.gz"
    assert (
        server_command(settings.endpoint_url, tenant.table.name, "export", "--org", tenant.org_id, str(path)).returncode
        == 0
    )
    target = empty_table(client)

    result = server_command(settings.endpoint_url, target.name, "restore", "--org", tenant.org_id, str(path))

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"restored organisation {tenant.org_id} from file org.jsonl.gz")
    assert "0 counters repaired" in result.stdout
    # The command's export wrote its audit event after the file: the file's lines come back.
    assert item_lines(exported(target, tenant.org_id)) == item_lines([line for line in _lines(path)])


def test_restore__from_table(tenant: Tenant, client: DynamoDBClient, settings: DatastoreSettings) -> None:
    assert settings.endpoint_url is not None
    before = snapshot(client, tenant.table, tenant.org_id)
    departments.create_department(tenant.table, name="Later")

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
