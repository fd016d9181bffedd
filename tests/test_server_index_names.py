"""``python server.py index-names [--org ID]`` as a subprocess against DynamoDB Local."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from datastore import employees, keys, organizations
from datastore.config import DatastoreSettings
from datastore.entities import Employee, Plan
from datastore.provision import ensure_table
from datastore.scope import PlatformScope, TenantScope
from datastore.table import Table
from tests.conftest import Tenant, unique_domain
from tests.datastore.support import all_pages, written_before_search

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ROOT = Path(__file__).resolve().parent.parent


def index_names(settings: DatastoreSettings, table_name: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert settings.endpoint_url is not None
    env = {**os.environ, "DYNAMODB_ENDPOINT": settings.endpoint_url, "HR_TABLE_NAME": table_name}
    return subprocess.run(
        [sys.executable, "server.py", "index-names", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def by_name(table: Table, prefix: str) -> list[str]:
    return [e.emp_id for e in all_pages(lambda request: employees.list_employees_by_name(table, prefix, request))]


def test_index_names__one_org__old_employees_searchable(tenant: Tenant, settings: DatastoreSettings) -> None:
    staff = written_before_search(tenant.table, 3)
    assert by_name(tenant.table, "bulk") == []

    result = index_names(settings, tenant.table.name, "--org", tenant.org_id)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{tenant.org_id}: 4 employees indexed"]  # and the admin
    assert by_name(tenant.table, "bulk") == [e.emp_id for e in staff]


def test_index_names__no_org__every_organisation(client: DynamoDBClient, settings: DatastoreSettings) -> None:
    # A table of its own: every organisation listed (AP14) is one of this test's.
    table_name = f"hr-names-{keys.new_id().lower()}"
    ensure_table(client, table_name)
    platform = Table(client, table_name, PlatformScope())
    staff: dict[str, list[Employee]] = {}
    for name, count in (("One", 2), ("Two", 0)):
        domain = unique_domain()
        org, _admin = organizations.create_organization(
            platform,
            name=name,
            plan=Plan.FREE,
            email_domains=[domain],
            admin_email=f"a@{domain}",
            admin_first_name="A",
            admin_last_name="B",
        )
        staff[org.org_id] = written_before_search(platform.with_scope(TenantScope(org.org_id)), count)

    result = index_names(settings, table_name)

    assert result.returncode == 0, result.stderr
    indexed = {org_id: len(members) + 1 for org_id, members in staff.items()}  # and the admin
    assert sorted(result.stdout.splitlines()) == sorted(
        f"{org_id}: {count} employee{'s' * (count != 1)} indexed" for org_id, count in indexed.items()
    )
    for org_id, members in staff.items():
        assert by_name(platform.with_scope(TenantScope(org_id)), "bulk") == [e.emp_id for e in members]


def test_index_names__unknown_or_malformed_org__exit_2_in_one_line_nothing_written(
    tenant: Tenant, settings: DatastoreSettings
) -> None:
    written_before_search(tenant.table, 1)

    unknown = index_names(settings, tenant.table.name, "--org", keys.new_id())
    malformed = index_names(settings, tenant.table.name, "--org", tenant.org_id.lower() + " ")

    assert (unknown.returncode, malformed.returncode) == (2, 2)
    assert unknown.stderr.startswith("error: no organisation has the id ")
    assert malformed.stderr.startswith("error: --org: ")
    assert len(unknown.stderr.splitlines()) == len(malformed.stderr.splitlines()) == 1
    assert (unknown.stdout, malformed.stdout) == ("", "")
    assert by_name(tenant.table, "bulk") == []
