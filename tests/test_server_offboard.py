"""``python server.py offboard --org ID [--grace-days N] [--receipt]`` as a subprocess."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from datastore.config import DatastoreSettings
from datastore.kinds import layout
from datastore.kinds.entities import OrganizationStatus
from datastore.lifecycle import offboarding
from datastore.tenancy import keys
from tests import blocking
from tests.conftest import Tenant, TenantFactory
from tests.datastore.lifecycle.support import counted, everything
from tests.server_commands import server_command

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def test_offboard__no_grace__closed_deleted_and_the_receipt_printed(
    tenant: Tenant, make_tenant: TenantFactory, settings: DatastoreSettings
) -> None:
    assert settings.endpoint_url is not None
    tenant.employee(tenant.department())
    other = make_tenant("Other")
    others = counted(tenant.table, other.org_id)

    result = server_command(
        settings.endpoint_url, tenant.table.name, "offboard", "--org", tenant.org_id, "--grace-days", "0", "--yes"
    )
    receipt = server_command(settings.endpoint_url, tenant.table.name, "offboard", "--org", tenant.org_id, "--receipt")

    assert result.returncode == 0, result.stderr
    assert everything(tenant.table, tenant.org_id) == []
    assert counted(tenant.table, other.org_id) == others
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"organisation {tenant.org_id} ({tenant.organization.name}), closed ")
    assert "by operator" in lines[0] and lines[-1].startswith("deleted in ")
    assert receipt.returncode == 0 and receipt.stdout.splitlines() == lines[:-1]


def test_offboard__with_a_grace_period__closed_and_waiting(tenant: Tenant, settings: DatastoreSettings) -> None:
    assert settings.endpoint_url is not None
    before = counted(tenant.table, tenant.org_id)

    result = server_command(settings.endpoint_url, tenant.table.name, "offboard", "--org", tenant.org_id)

    assert result.returncode == 0, result.stderr
    assert "is CLOSING: its data is deleted after" in result.stdout
    assert sum(counted(tenant.table, tenant.org_id).values()) == sum(before.values()) + 1  # the close event


def test_offboard__receipt_of_an_organisation_never_closed__exit_2(tenant: Tenant, settings: DatastoreSettings) -> None:
    assert settings.endpoint_url is not None
    result = server_command(settings.endpoint_url, tenant.table.name, "offboard", "--org", tenant.org_id, "--receipt")
    assert result.returncode == 2 and "never closed" in result.stderr


def test_offboard__no_grace_without_yes__refused_exit_2_nothing_done(
    tenant: Tenant, settings: DatastoreSettings
) -> None:
    assert settings.endpoint_url is not None
    before = counted(tenant.table, tenant.org_id)

    result = server_command(
        settings.endpoint_url, tenant.table.name, "offboard", "--org", tenant.org_id, "--grace-days", "0"
    )

    assert result.returncode == 2
    assert "add --yes to confirm; nothing was done" in result.stderr
    assert counted(tenant.table, tenant.org_id) == before
    assert _status(tenant) is OrganizationStatus.ACTIVE


def test_offboard__a_deleted_organisation_restored__offboarded_anew_with_its_own_receipt(
    tenant: Tenant, client: DynamoDBClient, settings: DatastoreSettings, tmp_path: Path
) -> None:
    assert settings.endpoint_url is not None
    tenant.employee(tenant.department())
    path = tmp_path / "acme.jsonl.gz"

    def run(*args: str) -> str:
        result = server_command(settings.endpoint_url or "", tenant.table.name, *args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    run("export", "--org", tenant.org_id, str(path))
    first = run("offboard", "--org", tenant.org_id, "--grace-days", "0", "--yes").splitlines()
    run("restore", "--org", tenant.org_id, str(path), "--drain-seconds", "0")
    restored = counted(tenant.table, tenant.org_id)
    assert _status(tenant) is OrganizationStatus.ACTIVE

    gone = run("offboard", "--org", tenant.org_id, "--grace-days", "0", "--yes").splitlines()

    assert everything(tenant.table, tenant.org_id) == []
    assert gone[0] != first[0]  # closed anew, by this run
    # The receipt counts what this deletion found: what the restore put back, and its close event.
    assert gone[2] == f"  {sum(restored.values()) + 1} items: " + ", ".join(
        f"{count} {kind}" for kind, count in sorted((restored + Counter({"AuditEvent": 1})).items())
    )
    assert gone[-1].startswith("deleted in ")
    records = client.query(
        TableName=tenant.table.name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": keys.lifecycle_pk(tenant.org_id)}},
    )["Items"]
    # The first offboarding's receipt is kept beside this one's.
    [former] = [item for item in records if item["entity"]["S"] == layout.FORMER_DELETION.tag]
    assert offboarding.describe(layout.FORMER_DELETION.read(former)) == first[:-1]
    again = run("offboard", "--org", tenant.org_id)
    assert again.startswith(f"organisation {tenant.org_id} was deleted already; nothing to do")
    assert "deleted in" not in again
    # Restored once more, the default grace period: closed by this run, its receipt its own.
    run("restore", "--org", tenant.org_id, str(path), "--drain-seconds", "0")
    closing = run("offboard", "--org", tenant.org_id)
    assert "is CLOSING: its data is deleted after" in closing
    assert _status(tenant) is OrganizationStatus.CLOSING
    receipt = run("offboard", "--org", tenant.org_id, "--receipt").splitlines()
    assert receipt[0] != gone[0] and receipt[1] == "  deletion began -, finished -"


def _status(tenant: Tenant) -> OrganizationStatus:
    item = blocking.run(tenant.table.get(layout.ORGANIZATION.key_at(tenant.org_id), consistent=True))
    assert item is not None
    return layout.ORGANIZATION.read(item).status
