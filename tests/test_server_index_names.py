"""``python server.py index-names [--org ID]`` as a subprocess against DynamoDB Local."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

from datastore.aws.client import AsyncDynamo
from datastore.config import DatastoreSettings
from datastore.table.scoped import Table
from datastore.tenancy.scope import TenantScope
from datastore.tenants import employees
from datastore.values import ids
from tests.conftest import Tenant
from tests.datastore.support import all_pages, written_before_search
from tests.server_commands import own_platform, server_command

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def index_names(settings: DatastoreSettings, table_name: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert settings.endpoint_url is not None
    return server_command(settings.endpoint_url, table_name, "index-names", *args)


def by_name(table: Table, prefix: str) -> list[str]:
    return [e.emp_id for e in all_pages(lambda request: employees.list_employees_by_name(table, prefix, request))]


def test_index_names__one_org__old_employees_searchable(
    tenant: Tenant, settings: DatastoreSettings, client: DynamoDBClient
) -> None:
    staff = written_before_search(client, tenant.table, 3)
    assert by_name(tenant.table, "bulk") == []

    result = index_names(settings, tenant.table.name, "--org", tenant.org_id)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{tenant.org_id}: 4 employees indexed"]  # and the admin
    assert by_name(tenant.table, "bulk") == [e.emp_id for e in staff]


def test_index_names__no_org__every_organisation(
    client: DynamoDBClient, settings: DatastoreSettings, dynamo: AsyncDynamo
) -> None:
    platform, orgs = own_platform(client, dynamo, ["One", "Two"])
    staff = {
        org.org_id: written_before_search(client, platform.with_scope(TenantScope(org.org_id)), count)
        for org, count in zip(orgs, (2, 0), strict=True)
    }

    result = index_names(settings, platform.name)

    assert result.returncode == 0, result.stderr
    indexed = {org_id: len(members) + 1 for org_id, members in staff.items()}  # and the admin
    assert sorted(result.stdout.splitlines()) == sorted(
        f"{org_id}: {count} employee{'s' * (count != 1)} indexed" for org_id, count in indexed.items()
    )
    for org_id, members in staff.items():
        assert by_name(platform.with_scope(TenantScope(org_id)), "bulk") == [e.emp_id for e in members]


def test_index_names__unknown_or_malformed_org__exit_2_in_one_line_nothing_written(
    tenant: Tenant, settings: DatastoreSettings, client: DynamoDBClient
) -> None:
    written_before_search(client, tenant.table, 1)

    unknown = index_names(settings, tenant.table.name, "--org", ids.new_id())
    malformed = index_names(settings, tenant.table.name, "--org", tenant.org_id.lower() + " ")

    assert (unknown.returncode, malformed.returncode) == (2, 2)
    assert unknown.stderr.startswith("error: no organisation has the id ")
    assert malformed.stderr.startswith("error: --org: ")
    assert len(unknown.stderr.splitlines()) == len(malformed.stderr.splitlines()) == 1
    assert (unknown.stdout, malformed.stdout) == ("", "")
    assert by_name(tenant.table, "bulk") == []
