"""``python server.py offboard --org ID [--grace-days N] [--receipt]`` as a subprocess."""

from __future__ import annotations

from datastore.config import DatastoreSettings
from tests.conftest import Tenant, TenantFactory
from tests.datastore.lifecycle.support import counted, everything
from tests.server_commands import server_command


def test_offboard__no_grace__closed_deleted_and_the_receipt_printed(
    tenant: Tenant, make_tenant: TenantFactory, settings: DatastoreSettings
) -> None:
    assert settings.endpoint_url is not None
    tenant.employee(tenant.department())
    other = make_tenant("Other")
    others = counted(tenant.table, other.org_id)

    result = server_command(
        settings.endpoint_url, tenant.table.name, "offboard", "--org", tenant.org_id, "--grace-days", "0"
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
