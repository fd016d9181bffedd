"""The write envelope's locked reads: a write another request lands first is read again and retried
only when the caller named no version."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from datastore.errors import StaleVersion
from datastore.kinds import layout
from datastore.kinds.entities import Employee
from datastore.tenants import employees
from datastore.writes import envelope, locking
from datastore.writes.changes import Change
from tests.blocking import run
from tests.conftest import Tenant

Step = Callable[[envelope.Write, Employee], Awaitable[Employee]]


def _racing_step(seen: list[int], races: int) -> Step:
    """A step that renames the employee; its first ``races`` reads are overtaken by another
    request's update before its own write goes out."""

    async def step(write: envelope.Write, current: Employee) -> Employee:
        seen.append(current.version)
        if len(seen) <= races:
            await employees.update_employee(
                write.table, current.emp_id, expected_version=current.version, first_name=f"Racer{len(seen)}"
            )
        renamed = replace(current, first_name="Mine", version=current.version + 1)
        before, after = layout.EMPLOYEE.item(current), layout.EMPLOYEE.item(renamed)
        change = Change("test.rename", layout.EMPLOYEE.tag, current.emp_id, current.org_id, before, after)
        await write.commit([locking.put_versioned(layout.EMPLOYEE, after, current.version)], change)
        return renamed

    return step


def test_on_current__unversioned_write_overtaken__read_again_and_retried(tenant: Tenant) -> None:
    seen: list[int] = []
    start = tenant.admin.version
    write = envelope.Write(tenant.table)
    step = _racing_step(seen, races=2)
    done = run(write.on_current(layout.EMPLOYEE, tenant.admin.emp_id, None, step, unversioned_attempts=3))
    assert seen == [start, start + 1, start + 2]
    assert done.first_name == "Mine" and done.version == start + 3
    assert run(employees.get_employee(tenant.table, tenant.admin.emp_id, consistent=True)) == done


def test_on_current__unversioned_attempts_used_up__stale_version(tenant: Tenant) -> None:
    seen: list[int] = []
    write = envelope.Write(tenant.table)
    step = _racing_step(seen, races=2)
    with pytest.raises(StaleVersion):
        run(write.on_current(layout.EMPLOYEE, tenant.admin.emp_id, None, step, unversioned_attempts=2))
    assert len(seen) == 2
    found = run(employees.get_employee(tenant.table, tenant.admin.emp_id, consistent=True))
    assert found is not None and found.first_name == "Racer2"


def test_on_current__expected_version_overtaken__stale_version_at_once(tenant: Tenant) -> None:
    seen: list[int] = []
    write = envelope.Write(tenant.table)
    step = _racing_step(seen, races=1)
    with pytest.raises(StaleVersion):
        run(write.on_current(layout.EMPLOYEE, tenant.admin.emp_id, tenant.admin.version, step, unversioned_attempts=5))
    assert seen == [tenant.admin.version]
