"""``python server.py <command>`` as a subprocess against the session's DynamoDB Local."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from datastore.aws.client import AsyncDynamo
from datastore.kinds.entities import Organization, Plan
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope
from datastore.tenants import organizations
from datastore.values import ids
from tests.blocking import run
from tests.conftest import provisioned, unique_domain

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ROOT = Path(__file__).resolve().parent.parent


def server_command(
    endpoint: str, table_name: str, *args: str, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``server.py *args`` on ``table_name`` at ``endpoint`` (with ``env`` added to the
    environment); its exit status is the test's to check."""
    env = {**os.environ, "DYNAMODB_ENDPOINT": endpoint, "HR_TABLE_NAME": table_name, **(env or {})}
    return subprocess.run(
        [sys.executable, "server.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def own_platform(client: DynamoDBClient, dynamo: AsyncDynamo, names: Sequence[str]) -> tuple[Table, list[Organization]]:
    """A table of its own holding one organisation per name, for the commands that run over
    every organisation (AP14): everything they find there is the test's."""
    table = Table(dynamo, f"hr-platform-{ids.new_id().lower()}", PlatformScope())
    provisioned(client, dynamo, table.name)
    orgs = []
    for name in names:
        domain = unique_domain()
        org, _admin = run(
            organizations.create_organization(
                table,
                name=name,
                plan=Plan.FREE,
                email_domains=[domain],
                admin_email=f"a@{domain}",
                admin_first_name="A",
                admin_last_name="B",
            )
        )
        orgs.append(org)
    return table, orgs
