"""``python server.py import``: a real CSV file into DynamoDB Local, run as a subprocess."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from datastore.table.pagination import PageRequest
from datastore.tenants import departments, employees, organizations
from datastore.values.ids import new_id
from datastore.writes import audit
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant, unique_domain
from tests.server_commands import server_command


def run_import(
    tmp_path: Path, endpoint: str, table_name: str, org_id: str, content: bytes
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "employees.csv"
    path.write_bytes(content)
    return server_command(endpoint, table_name, "import", "--org", org_id, str(path), timeout=300)


def test_import__csv_file__creates_rows_reports_failures_by_line(
    tmp_path: Path, dynamodb_endpoint: str, table_name: str, tenant: Tenant
) -> None:
    dept = tenant.department()
    dept_id = ids.encode("Department", dept.dept_id)
    lines = ["email,firstName,lastName,role,departmentId,hiredAt"]
    lines += [f"p{i}@{tenant.domain},First{i},Last{i},,{dept_id}," for i in range(150)]
    lines.insert(5, f"x@{unique_domain()},Other,Domain,,,")  # line 6: not the organisation's domain
    lines.insert(9, f"p3@{tenant.domain},First3,Last3,,{dept_id},")  # line 10: p3 again in its batch
    lines.insert(12, f"bad@{tenant.domain},Bad,Role,CEO,,")  # line 13: no such role
    lines.insert(130, f"p9@{tenant.domain},Other,Person,,,")  # line 131: p9 (of an earlier batch), other data
    content = ("\r\n".join(lines) + "\r\n").encode()

    first = run_import(tmp_path, dynamodb_endpoint, table_name, tenant.org_id, content)

    assert first.returncode == 1, first.stderr
    out = first.stdout.splitlines()
    assert out, first.stderr
    assert out[0] == "154 rows: 150 created, 0 unchanged, 4 failed", first.stderr
    assert out[1].startswith("  line 6, email: BAD_USER_INPUT: must be an address in one of your organisation")
    assert out[2] == "  line 10, email: BAD_USER_INPUT: repeats the email of an earlier row"
    assert out[3] == "  line 13, role: BAD_USER_INPUT: must be one of ADMIN, MANAGER, EMPLOYEE"
    assert out[4].startswith("  line 131, email: CONFLICT: ")
    assert "firstName, lastName, departmentId" in out[4]
    assert "importing" in first.stderr  # the progress bar
    found = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert found is not None and found.headcount == 150

    again = run_import(tmp_path, dynamodb_endpoint, table_name, tenant.org_id, content)

    assert again.returncode == 1
    assert again.stdout.splitlines()[0] == "154 rows: 0 created, 150 unchanged, 4 failed"
    found = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert found is not None and found.headcount == 150


def test_import__all_rows_good__exit_zero(
    tmp_path: Path, dynamodb_endpoint: str, table_name: str, tenant: Tenant
) -> None:
    # A spreadsheet's UTF-8 with a byte-order mark, columns in another order, a non-ASCII name.
    content = f"\ufefflastName,email,firstName\nÅström,ana@{tenant.domain},Åsa\n".encode()
    result = run_import(tmp_path, dynamodb_endpoint, table_name, tenant.org_id, content)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["1 rows: 1 created, 0 unchanged, 0 failed"]
    emp_id = run(employees.find_employee_id_by_email(tenant.table, f"ana@{tenant.domain}"))
    assert emp_id is not None
    person = run(employees.get_employee(tenant.table, emp_id))
    assert person is not None and (person.first_name, person.last_name) == ("Åsa", "Åström")


def test_import__each_rows_audit_event_expires_after_the_organisations_retention(
    tmp_path: Path, dynamodb_endpoint: str, table_name: str, tenant: Tenant
) -> None:
    run(organizations.set_audit_retention(tenant.table, 800))
    content = "email,firstName,lastName\n" + "".join(f"r{n}@{tenant.domain},Row,Number{n}\n" for n in range(3))

    result = run_import(tmp_path, dynamodb_endpoint, table_name, tenant.org_id, content.encode())

    assert result.returncode == 0, result.stderr
    created = [
        event
        for event in run(audit.list_audit_events(tenant.table, PageRequest(first=20))).items
        if event.action == "employee.create" and event.actor_id is None
    ]
    assert len(created) == 3
    for event in created:
        assert event.expires_at == datetime.fromtimestamp(
            int((event.occurred_at + timedelta(days=800)).timestamp()), UTC
        )


def test_import__missing_column__one_line_exit_2(
    tmp_path: Path, dynamodb_endpoint: str, table_name: str, tenant: Tenant
) -> None:
    content = f"email,firstName\nm@{tenant.domain},Mia\n".encode()
    result = run_import(tmp_path, dynamodb_endpoint, table_name, tenant.org_id, content)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: line 1: missing column(s) lastName (columns: email, firstName, lastName, optionally role, "
        "departmentId, hiredAt)"
    ]
    assert run(employees.find_employee_id_by_email(tenant.table, f"m@{tenant.domain}")) is None


def test_import__not_utf8__one_line_exit_2(
    tmp_path: Path, dynamodb_endpoint: str, table_name: str, tenant: Tenant
) -> None:
    content = f"email,firstName,lastName\nl@{tenant.domain},Lé,Latin\n".encode("latin-1")
    result = run_import(tmp_path, dynamodb_endpoint, table_name, tenant.org_id, content)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: the file is not UTF-8 (invalid continuation byte); save it as CSV UTF-8"
    ]


def test_import__unknown_organisation__exit_2(tmp_path: Path, dynamodb_endpoint: str, table_name: str) -> None:
    missing = new_id()
    result = run_import(tmp_path, dynamodb_endpoint, table_name, missing, b"email,firstName,lastName\n")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"error: no organisation has the id {missing}"
