"""``python server.py schema-check``: the code's schema against an earlier one, and every operation
clients send (trusted documents, a manifest, the table's persisted documents) checked against it."""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from datastore.aws.client import AsyncDynamo
from datastore.config import DatastoreSettings
from datastore.tenancy.scope import TenantScope
from datastore.tenants import persisted_documents
from tests.blocking import run
from tests.paths import ROOT
from tests.server_commands import own_platform, server_command

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CURRENT = (ROOT / "schema.graphql").read_text()
# The employee field the earlier schema of these tests had, and the code's has not.
EMPLOYEE = "type Employee implements Node {\n"
WITH_NICKNAME = CURRENT.replace(EMPLOYEE, EMPLOYEE + '  """Removed since."""\n  nickname: String\n', 1)
USES_NICKNAME = "query TeamNicknames { me { email nickname } }"
FINE = "query MyEmail { me { email } }"


def schema_check(
    settings: DatastoreSettings, table_name: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    assert settings.endpoint_url is not None
    return server_command(settings.endpoint_url, table_name, "schema-check", *args, env=env)


def written(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def report(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_removed_field_a_trusted_document_uses__exit_1_naming_it(
    tmp_path: Path, settings: DatastoreSettings, table_name: str
) -> None:
    manifest = written(tmp_path, "manifest.json", json.dumps({"sha256:a": USES_NICKNAME, "sha256:b": FINE}))
    result = schema_check(
        settings,
        table_name,
        "--against",
        written(tmp_path, "old.graphql", WITH_NICKNAME),
        "--skip-table",
        env={"TRUSTED_DOCUMENTS": manifest},
    )
    assert result.returncode == 1, result.stderr
    assert "  FIELD_REMOVED: Field Employee.nickname was removed." in result.stdout.splitlines()
    assert "  TeamNicknames (trusted sha256:a)" in result.stdout.splitlines()
    assert (
        "    Cannot query field 'nickname' on type 'Employee'. Did you mean 'firstName' or 'lastName'? (line 1)"
        in result.stdout.splitlines()
    )
    assert "MyEmail" not in result.stdout
    assert result.stdout.splitlines()[-1] == "FAIL: an operation a client sends breaks"


def test_removed_field_no_client_uses__reported_but_exit_0(
    tmp_path: Path, settings: DatastoreSettings, table_name: str
) -> None:
    manifest = written(tmp_path, "manifest.json", json.dumps({"b": FINE}))
    result = schema_check(
        settings,
        table_name,
        "--against",
        written(tmp_path, "old.graphql", WITH_NICKNAME),
        "--documents",
        manifest,
        # The session's table holds every suite's organisations, 4,096 document slots each.
        "--skip-table",
    )
    assert result.returncode == 0, result.stderr
    assert "breaking changes: 1" in result.stdout


def test_added_optional_argument__exit_0_dangerous_only(
    tmp_path: Path, settings: DatastoreSettings, table_name: str
) -> None:
    field = "  applications(\n"
    start = CURRENT.index(field, CURRENT.index(EMPLOYEE))
    end = CURRENT.index("  ): ApplicationConnection\n", start)
    without_first = CURRENT[:start] + CURRENT[start:end].split('    """\n    How many')[0] + CURRENT[end:]
    assert without_first != CURRENT
    result = schema_check(
        settings, table_name, "--against", written(tmp_path, "old.graphql", without_first), "--skip-table", "--json"
    )
    assert result.returncode == 0, result.stderr
    found = report(result)
    assert found["breaking"] == []
    assert found["dangerous"] == [
        {"type": "OPTIONAL_ARG_ADDED", "description": "An optional argument Employee.applications(first:) was added."}
    ]
    assert found["ok"] is True


def test_changed_default__dangerous(tmp_path: Path, settings: DatastoreSettings, table_name: str) -> None:
    start = CURRENT.index(EMPLOYEE)
    at = CURRENT.index("first: Int! = 20", start)
    old = CURRENT[:at] + "first: Int! = 10" + CURRENT[at + len("first: Int! = 20") :]
    result = schema_check(settings, table_name, "--against", written(tmp_path, "old.graphql", old), "--skip-table")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "breaking changes: 0" in lines
    assert "dangerous changes: 1" in lines
    assert "  ARG_DEFAULT_VALUE_CHANGE: Employee.applications(first:) has changed defaultValue from 10 to 20." in lines


def test_persisted_documents__per_organisation_those_run_within_days(
    tmp_path: Path, client: DynamoDBClient, settings: DatastoreSettings, dynamo: AsyncDynamo
) -> None:
    platform, [one, two] = own_platform(client, dynamo, ["One", "Two"])
    now = datetime.now(UTC)
    recent, stale = USES_NICKNAME, "query OldNicknames { me { nickname } }"
    for org, text, at in ((one, recent, now - timedelta(days=2)), (two, stale, now - timedelta(days=20))):
        table = platform.with_scope(TenantScope(org.org_id))
        run(persisted_documents.put_document(table, org.org_id, hashlib.sha256(text.encode()).hexdigest(), text, at))
    against = written(tmp_path, "old.graphql", WITH_NICKNAME)

    last_week = schema_check(settings, platform.name, "--against", against, "--days", "7", "--json")
    month = schema_check(settings, platform.name, "--against", against, "--json")

    assert last_week.returncode == 1, last_week.stderr
    [failing] = report(last_week)["failing"]
    assert failing["source"] == "persisted"
    assert failing["organization"] == one.org_id
    assert failing["operation"] == "TeamNicknames"
    assert failing["lastSeen"][:10] == (now - timedelta(days=2)).date().isoformat()
    assert month.returncode == 1, month.stderr
    assert sorted(f["operation"] for f in report(month)["failing"]) == ["OldNicknames", "TeamNicknames"]


def test_documents_directory__each_graphql_file(tmp_path: Path, settings: DatastoreSettings, table_name: str) -> None:
    (tmp_path / "ops").mkdir()
    written(tmp_path / "ops", "nick.graphql", USES_NICKNAME)
    written(tmp_path / "ops", "fine.graphql", FINE)
    against = written(tmp_path, "old.graphql", WITH_NICKNAME)
    result = schema_check(
        settings, table_name, "--against", against, "--documents", str(tmp_path / "ops"), "--skip-table", "--json"
    )
    assert result.returncode == 1
    assert [(f["id"], f["operation"]) for f in report(result)["failing"]] == [("nick.graphql", "TeamNicknames")]


def test_git_ref__head_schema__unchanged__exit_0(settings: DatastoreSettings, table_name: str) -> None:
    result = schema_check(settings, table_name, "--against", "HEAD", "--skip-table")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "schema-check against HEAD:schema.graphql"


def test_bad_input__exit_2_with_a_message(tmp_path: Path, settings: DatastoreSettings, table_name: str) -> None:
    not_sdl = written(tmp_path, "not.graphql", "type {")
    bad_manifest = written(tmp_path, "bad.json", "[1, 2]")
    cases = [
        (("--against", "no-such-ref-or-file"), "no such file, nor a git ref"),
        (("--against", not_sdl), "is not a schema"),
        (("--documents", bad_manifest), "must be a JSON object of id -> document text"),
        (("--documents", str(tmp_path / "missing")), "no such file or directory"),
        (("--days", "0"), "--days must be at least 1"),
    ]
    for args, message in cases:
        result = schema_check(settings, table_name, *args, "--skip-table")
        assert result.returncode == 2, (args, result.stdout)
        assert message in result.stderr, (args, result.stderr)
        assert result.stdout == ""
