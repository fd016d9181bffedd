"""``python server.py token`` as a subprocess: only the token on stdout, and which table it read on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jwt

from datastore.aws.client import AsyncDynamo, Mirror
from datastore.aws.control_plane import make_client
from datastore.config import DatastoreSettings
from datastore.dev.local import DynamoDBLocal, free_port
from datastore.kinds.entities import Plan
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope
from datastore.tenants import organizations
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant, provisioned, unique_domain
from tests.server_commands import ROOT, server_command


def _one_jwt(stdout: str) -> dict[str, object]:
    """The claims of the one line stdout holds, which must be a JWT and nothing else."""
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    claims: dict[str, object] = jwt.decode(lines[0], options={"verify_signature": False})
    return claims


def test_token__configured_endpoint__only_the_token_on_stdout_and_the_table_on_stderr(
    tenant: Tenant, settings: DatastoreSettings
) -> None:
    assert settings.endpoint_url is not None
    result = server_command(settings.endpoint_url, tenant.table.name, "token", "--email", tenant.admin.email)
    assert result.returncode == 0, result.stderr
    assert _one_jwt(result.stdout)["sub"] == tenant.admin.emp_id
    assert f"read from table {tenant.table.name} at {settings.endpoint_url}" in result.stderr


def test_token__its_own_engine_on_another_data_folder__diagnostics_on_stderr(
    tmp_path: Path, settings: DatastoreSettings
) -> None:
    """No server runs on this data folder, so the command starts DynamoDB Local itself: the line
    saying so, and which table the token came from, go to stderr."""
    data_dir = tmp_path / "other"
    table_name = f"hr-token-{ids.new_id().lower()}"
    domain = unique_domain()
    with DynamoDBLocal(settings.local_cache_dir, port=free_port(), data_dir=data_dir) as local:
        engine = replace(settings, endpoint_url=local.endpoint_url)
        client, dynamo = make_client(engine, local.endpoint_url), AsyncDynamo.of(Mirror.of(engine))
        provisioned(client, dynamo, table_name)
        _org, admin = run(
            organizations.create_organization(
                Table(dynamo, table_name, PlatformScope()),
                name="Elsewhere",
                plan=Plan.FREE,
                email_domains=[domain],
                admin_email=f"a@{domain}",
                admin_first_name="A",
                admin_last_name="B",
            )
        )
    env = {
        **os.environ,
        "DYNAMODB_LOCAL_DATA": str(data_dir),
        "DYNAMODB_LOCAL_PORT": str(free_port()),
        "HR_TABLE_NAME": table_name,
    }
    env.pop("DYNAMODB_ENDPOINT", None)
    result = subprocess.run(
        [sys.executable, "server.py", "token", "--email", admin.email],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert _one_jwt(result.stdout)["sub"] == admin.emp_id
    assert "DynamoDB Local on http://127.0.0.1:" in result.stderr
    assert f"read from table {table_name} at http://127.0.0.1:" in result.stderr
    assert f"data in {data_dir}" in result.stderr


def test_token__unknown_email__names_the_table_and_prints_nothing_on_stdout(
    tenant: Tenant, settings: DatastoreSettings
) -> None:
    assert settings.endpoint_url is not None
    result = server_command(settings.endpoint_url, tenant.table.name, "token", "--email", f"nobody@{unique_domain()}")
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"in table {tenant.table.name} at {settings.endpoint_url}" in result.stderr
