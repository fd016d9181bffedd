"""``python server.py check-counts [--org ID] [--fix]`` as a subprocess against DynamoDB Local."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

from datastore.aws.client import AsyncDynamo
from datastore.config import DatastoreSettings
from datastore.kinds import layout
from datastore.tenancy.scope import TenantScope
from datastore.tenants import departments
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.upkeep.test_counts import corrupt
from tests.server_commands import own_platform, server_command

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def check_counts(settings: DatastoreSettings, table_name: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert settings.endpoint_url is not None
    return server_command(settings.endpoint_url, table_name, "check-counts", *args)


def test_check_counts__org_with_drift__exit_1_then_fix_exit_0_then_clean(
    tenant: Tenant, client: DynamoDBClient, settings: DatastoreSettings
) -> None:
    dept = tenant.department()
    tenant.employee(dept)
    corrupt(client, tenant.table.name, layout.DEPARTMENT.key_at(tenant.org_id, dept.dept_id), headcount=7)

    found = check_counts(settings, tenant.table.name, "--org", tenant.org_id)
    fixed = check_counts(settings, tenant.table.name, "--org", tenant.org_id, "--fix")
    clean = check_counts(settings, tenant.table.name, "--org", tenant.org_id)

    assert found.returncode == 1, found.stderr
    assert found.stdout.splitlines() == [
        f"org {tenant.org_id} Department {dept.dept_id} headcount: stored 7, counted 1",
        "checked 1 departments and 0 jobs: 1 difference found",
    ]
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.splitlines()[0].endswith("stored 7, counted 1 (fixed)")
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout.splitlines() == ["checked 1 departments and 0 jobs: 0 differences found"]


def test_check_counts__no_org__checks_every_organisation(
    client: DynamoDBClient, settings: DatastoreSettings, dynamo: AsyncDynamo
) -> None:
    platform, orgs = own_platform(client, dynamo, ["One", "Two"])
    table_name = platform.name
    dept = run(departments.create_department(platform.with_scope(TenantScope(orgs[1].org_id)), name="Ops"))
    corrupt(client, table_name, layout.DEPARTMENT.key_at(orgs[1].org_id, dept.dept_id), headcount=-2)

    result = check_counts(settings, table_name)

    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        f"org {orgs[1].org_id} Department {dept.dept_id} headcount: stored -2, counted 0",
        "checked 1 departments and 0 jobs: 1 difference found",
    ]


def test_check_counts__unknown_or_malformed_org__exit_2_in_one_line(
    tenant: Tenant, settings: DatastoreSettings
) -> None:
    unknown = check_counts(settings, tenant.table.name, "--org", ids.new_id())
    malformed = check_counts(settings, tenant.table.name, "--org", "nope")

    assert (unknown.returncode, malformed.returncode) == (2, 2)
    assert unknown.stderr.startswith("error: no organisation has the id ")
    assert malformed.stderr.startswith("error: --org: ")
    assert len(unknown.stderr.splitlines()) == len(malformed.stderr.splitlines()) == 1
