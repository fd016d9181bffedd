"""The production entry point's start-up check of the data layout (graphql_api/entrypoints/asgi.py).

Each case imports ``graphql_api.entrypoints.asgi`` in a fresh interpreter, as a uvicorn worker or Lambda's
init does, and reads what it logged and how it exited.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from datastore.dev.local import free_port
from datastore.values import ids
from tests.datastore.support import drop_table
from tests.legacy_layout import create_legacy_table, typical_organization
from tests.server_commands import ROOT

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture
def legacy_table(client: DynamoDBClient) -> Iterator[str]:
    """A table of the previous release, holding one organisation."""
    name = f"hr-asgi-{ids.new_id().lower()}"
    create_legacy_table(client, name)
    typical_organization("Old Co", "old.example", people=1).write(client, name)
    yield name
    drop_table(client, name)


def import_asgi(endpoint: str, table_name: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DYNAMODB_ENDPOINT": endpoint, "HR_TABLE_NAME": table_name, **extra}
    return subprocess.run(
        [sys.executable, "-c", "import graphql_api.entrypoints.asgi"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_import__previous_releases_data__exits_2_with_one_log_line_naming_migrate(
    dynamodb_endpoint: str, legacy_table: str
) -> None:
    result = import_asgi(dynamodb_endpoint, legacy_table)

    assert result.returncode == 2
    [line] = (result.stdout + result.stderr).strip().splitlines()
    assert f"not serving: table {legacy_table} holds organisations but no layout version item" in line
    assert "CRITICAL" in line and "`python server.py migrate`" in line
    assert "Traceback" not in result.stderr


def test_import__serve_unmigrated_data__serves_with_a_warning(dynamodb_endpoint: str, legacy_table: str) -> None:
    result = import_asgi(dynamodb_endpoint, legacy_table, SERVE_UNMIGRATED_DATA="1")

    assert result.returncode == 0, result.stderr
    [line] = (result.stdout + result.stderr).strip().splitlines()
    assert f"WARNING: serving table {legacy_table} in layout 0" in line


def test_import__current_table__serves_without_a_word(dynamodb_endpoint: str, table_name: str) -> None:
    result = import_asgi(dynamodb_endpoint, table_name)

    assert result.returncode == 0, result.stderr
    assert (result.stdout + result.stderr).strip() == ""


def test_import__dynamodb_unreachable__exits_2_the_layout_being_unknown() -> None:
    result = import_asgi(f"http://127.0.0.1:{free_port()}", "hr-api")

    assert result.returncode == 2
    [line] = (result.stdout + result.stderr).strip().splitlines()
    assert "not serving: DynamoDB could not be reached: its data layout is unknown" in line
