"""Bulk onboarding, one row at a time: what a row of ``importEmployees`` means.

A row is a new employee keyed by its email. Each row is its own createEmployee transaction
(``employees.create_employee``), so every invariant of that write holds per row: unique
email, the organisation's own domain, the department's headcount, the audit event. A row:

* whose email names no employee of the organisation: created (CREATED);
* whose email names an ACTIVE employee with the same data: nothing written (UNCHANGED);
* whose email names an employee with other data, or an INACTIVE one: Conflict.

So a re-run after a failure finishes the job and duplicates nothing, and two runs at once
cannot both create a row: the loser's transaction fails on the taken email, and it reads the
winner's employee (strongly consistent) and reports the row UNCHANGED.

Existing employees are looked up for a whole batch at once (``existing``: one BatchGetItem of
email pointers, one of employees), so a re-run of 100 known rows costs two reads and no write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Final, Generic, TypeVar

from datastore.errors import Conflict
from datastore.kinds import layout
from datastore.kinds.entities import Employee, EmployeeStatus, Role
from datastore.table.scoped import Table
from datastore.tenants import employees
from datastore.values import items, validation
from datastore.values.ids import DepartmentId

# One request's rows: a BatchGetItem's worth, and what 100 transactions cost fits the call budget.
MAX_ROWS: Final = 100


class Outcome(StrEnum):
    CREATED = "CREATED"
    UNCHANGED = "UNCHANGED"


D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class Row(Generic[D]):
    """One person to onboard.

    ``department_id`` is a ``DepartmentId`` here; a row as a client sends it carries the
    department's global id instead (``Row[str]``, graphql_api/bulk/rows.py), decoded at the edge.
    """

    email: str
    first_name: str
    last_name: str
    role: Role = Role.EMPLOYEE
    department_id: D | None = None
    hired_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Imported:
    outcome: Outcome
    employee: Employee


def validated(row: Row[DepartmentId]) -> Row[DepartmentId]:
    """``row`` as it would be stored (email lower-case, names trimmed), or InvalidInput.

    Checked before any call, so a malformed row costs nothing; errors name the fields as the
    datastore does (``email``, ``first_name``, ``last_name``).
    """
    return replace(
        row,
        email=validation.email(row.email),
        first_name=validation.name(row.first_name, "first_name"),
        last_name=validation.name(row.last_name, "last_name"),
    )


def first_rows(rows: Sequence[Row[DepartmentId]]) -> dict[str, int]:
    """Each (validated) email with the index of the first row that has it."""
    first: dict[str, int] = {}
    for index, row in enumerate(rows):
        first.setdefault(row.email, index)
    return first


async def existing(table: Table, emails: Iterable[str]) -> dict[str, Employee]:
    """The organisation's employees that have these (validated) emails.

    Two BatchGetItem calls at most (pointers, then the employees they name), eventually
    consistent: a row read as missing that was just created fails on its email in
    ``import_row`` and is read again, strongly consistent, there.
    """
    wanted = list(dict.fromkeys(emails))
    if not wanted:
        return {}
    org_id = table.tenant.org_id
    pointers = await table.batch_get([layout.EMAIL_POINTER.key_at(org_id, email) for email in wanted])
    owners = {
        email: layout.EMAIL_POINTER.read(pointer, email=email).emp_id
        for email, pointer in zip(wanted, pointers, strict=True)
        if pointer is not None
    }
    if not owners:
        return {}
    found = await employees.get_employees(table, list(owners.values()))
    return {
        email: emp
        for (email, _), emp in zip(owners.items(), found, strict=True)
        if emp is not None and emp.email == email
    }


async def import_row(table: Table, row: Row[DepartmentId], current: Employee | None) -> Imported:
    """One validated row: CREATED, UNCHANGED, or Conflict (see the module's docstring).

    ``current`` is the employee ``existing`` found for the row's email, if any.
    """
    if current is not None:
        return Imported(Outcome.UNCHANGED, _same(row, current))
    try:
        created = await employees.create_employee(
            table,
            email=row.email,
            first_name=row.first_name,
            last_name=row.last_name,
            department_id=row.department_id,
            role=row.role,
            hired_at=row.hired_at,
        )
    except Conflict:
        # The email was taken between the lookup and the write: by a concurrent run of the
        # same row (UNCHANGED) or by someone else (a Conflict, as before).
        winner = await _by_email(table, row.email)
        if winner is None:
            raise
        return Imported(Outcome.UNCHANGED, _same(row, winner))
    return Imported(Outcome.CREATED, created)


def differences(row: Row[DepartmentId], current: Employee) -> list[str]:
    """The row's fields whose values differ from ``current``'s (an omitted hiredAt never does)."""
    compared = ["first_name", "last_name", "role", "department_id"]
    different = [field for field in compared if getattr(row, field) != getattr(current, field)]
    if row.hired_at is not None and items.timestamp(row.hired_at) != items.timestamp(current.hired_at):
        different.append("hired_at")
    # Named as stored (firstName, hiredAt): the names a CSV's columns and the API's fields share.
    return [layout.EMPLOYEE.names[field] for field in different]


def _same(row: Row[DepartmentId], current: Employee) -> Employee:
    if current.status is not EmployeeStatus.ACTIVE:
        raise Conflict(f"the email {row.email} belongs to an INACTIVE employee")
    different = differences(row, current)
    if different:
        raise Conflict(f"the email {row.email} belongs to an employee with another {', '.join(different)}")
    return current


async def _by_email(table: Table, email: str) -> Employee | None:
    pointer = await table.get(layout.EMAIL_POINTER.key_at(table.tenant.org_id, email), consistent=True)
    if pointer is None:
        return None
    return await employees.get_employee(table, layout.EMAIL_POINTER.read(pointer, email=email).emp_id, consistent=True)
