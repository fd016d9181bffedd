"""``python server.py erase --org ID --employee ID [--dry-run]`` as a subprocess."""

from __future__ import annotations

from datastore.config import DatastoreSettings
from datastore.kinds import layout
from datastore.tenants import employees
from tests.blocking import run
from tests.conftest import Tenant
from tests.server_commands import server_command


def test_erase__dry_run_lists__then_erases(tenant: Tenant, settings: DatastoreSettings) -> None:
    assert settings.endpoint_url is not None
    person = tenant.employee(tenant.department())
    run(employees.terminate_employee(tenant.table, person.emp_id))
    command = ("erase", "--org", tenant.org_id, "--employee", person.emp_id)

    dry = server_command(settings.endpoint_url, tenant.table.name, *command, "--dry-run")
    untouched = run(employees.get_employee(tenant.table, person.emp_id, consistent=True))
    done = server_command(settings.endpoint_url, tenant.table.name, *command)
    again = server_command(settings.endpoint_url, tenant.table.name, *command)

    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert any(line.startswith("tombstone") and f"EMP#{person.emp_id}" in line for line in lines)
    assert any(line.startswith("delete") and f"EMAIL#{person.email}" in line for line in lines)
    assert lines[-1].startswith(f"employee {person.emp_id} would touch {len(lines) - 1} items")
    assert untouched is not None and untouched.erased_at is None
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"employee {person.emp_id} erased: touched {len(lines) - 1} items")
    erased = run(employees.get_employee(tenant.table, person.emp_id, consistent=True))
    assert erased is not None and erased.erased_at is not None and erased.email == ""
    assert again.stdout.strip() == f"employee {person.emp_id} was erased already: nothing to do"
    assert run(tenant.table.get(layout.EMAIL_POINTER.key_at(tenant.org_id, person.email), consistent=True)) is None


def test_erase__an_active_employee__exit_2(tenant: Tenant, settings: DatastoreSettings) -> None:
    assert settings.endpoint_url is not None
    result = server_command(
        settings.endpoint_url, tenant.table.name, "erase", "--org", tenant.org_id, "--employee", tenant.admin.emp_id
    )
    assert result.returncode == 2 and "terminate them first" in result.stderr
