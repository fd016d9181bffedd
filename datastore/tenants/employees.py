"""Employees: AP2, AP3, AP4 (within a tenant), AP7, name search, and every write that moves headcount.

Each write that changes who is active in a department writes the employee, its membership
copy and the department counters in one transaction, conditioned on the employee's version,
so ``Department.headcount`` always equals the department's membership count. Every employee
write also rewrites the employee's name entries (``datastore.values.names``) in that transaction, and
deletes those a name change leaves behind, so search never sees a write half-done.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from datastore.errors import Conflict, InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import Employee, EmployeeStatus, Identity, Move, Role
from datastore.table import by_id, transact, updates
from datastore.table.pagination import Page, PageQuery, PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values import items, names, validation
from datastore.values.ids import DepartmentId, EmployeeId, OrgId, new_id
from datastore.values.items import Item
from datastore.writes import envelope, locking
from datastore.writes.changes import Change

# Moves and terminations without an expectedVersion re-read and retry this often when
# another write to the same employee lands between their read and their write.
UNVERSIONED_ATTEMPTS = 5

R = TypeVar("R")


def _email_taken(email: str) -> transact.FailureHandler:
    def handler(_old: Item | None) -> Conflict:
        return Conflict(f"the email {email} is already in use")

    return handler


def _in_own_domain(org_id: OrgId, email: str) -> transact.Op:
    """The email's domain is the organisation's: checked in the write's own transaction.

    A domain of another organisation and a domain of none fail alike, so the answer never
    tells a tenant who holds a domain, nor (since each email of a domain can only belong to
    the domain's owner) who holds an email.
    """

    def handler(_old: Item | None) -> InvalidInput:
        return InvalidInput("email", "must be an address in one of your organisation's email domains")

    return transact.check(
        layout.EMAIL_DOMAIN.key_at(validation.email_domain(email)),
        f"{layout.ORG_ID} = :org",
        values={":org": items.s(org_id)},
        on_failed=handler,
    )


def _department_missing() -> transact.FailureHandler:
    def handler(_old: Item | None) -> InvalidInput:
        return InvalidInput("department_id", "no such department")

    return handler


# --- reads -------------------------------------------------------------------------------


async def get_employee(table: Table, emp_id: EmployeeId, *, consistent: bool = False) -> Employee | None:
    """AP2: one GetItem."""
    return await by_id.get(table, layout.EMPLOYEE, emp_id, consistent=consistent)


async def get_employees(table: Table, emp_ids: Sequence[EmployeeId]) -> list[Employee | None]:
    """Many employees by id through BatchGetItem, in the order asked."""
    return await by_id.get_many(table, layout.EMPLOYEE, emp_ids)


def employees_of(org_id: OrgId) -> PageQuery[Employee]:
    """AP3: the organisation's employees by hire date (either order), one Query on GSI1."""
    return PageQuery(layout.EMPLOYEE.index_partition(org_id), layout.EMPLOYEE.read, index=keys.GSI1)


async def list_employees(table: Table, request: PageRequest) -> Page[Employee]:
    return await table.page(employees_of(table.tenant.org_id), request)


def department_employees(org_id: OrgId, dept_id: DepartmentId) -> PageQuery[Employee]:
    """AP7: a department's active employees, one Query over their membership copies."""
    return PageQuery(
        layout.MEMBERSHIP.partition(org_id, dept_id), layout.MEMBERSHIP.read, sk_prefix=layout.MEMBERSHIP.sort_prefix
    )


async def list_department_employees(table: Table, dept_id: DepartmentId, request: PageRequest) -> Page[Employee]:
    return await table.page(department_employees(table.tenant.org_id, dept_id), request)


def employees_by_name(org_id: OrgId, prefix: str) -> PageQuery[Employee]:
    """Employees by folded last name, first name, then id: one Query on a name partition.

    ``prefix`` is a folded search (``names.search``): the employees with a first or last name
    starting with it, each once; "" lists the whole directory, ACTIVE and INACTIVE.
    """
    return PageQuery(layout.NAME_ENTRY.partition(org_id, prefix), layout.NAME_ENTRY.read)


async def list_employees_by_name(table: Table, prefix: str, request: PageRequest) -> Page[Employee]:
    return await table.page(employees_by_name(table.tenant.org_id, prefix), request)


def email_pointer_key(org_id: OrgId, email: str) -> keys.Key:
    """AP4 within a tenant: the organisation's email pointer (InvalidInput for a malformed email)."""
    return layout.EMAIL_POINTER.key_at(org_id, validation.email(email))


def employee_id_of_pointer(item: Item | None, email: str) -> EmployeeId | None:
    return None if item is None else layout.EMAIL_POINTER.read(item, email=validation.email(email)).emp_id


async def find_employee_id_by_email(table: Table, email: str) -> EmployeeId | None:
    """AP4 within a tenant: one GetItem on the organisation's email pointer."""
    return employee_id_of_pointer(await table.get(email_pointer_key(table.tenant.org_id, email)), email)


# --- writes ------------------------------------------------------------------------------


def new_employee(
    org_id: OrgId,
    *,
    email: str,
    first_name: str,
    last_name: str,
    department_id: DepartmentId | None,
    role: Role,
    hired_at: datetime | None = None,
) -> Employee:
    return Employee(
        org_id=org_id,
        emp_id=EmployeeId(new_id()),
        email=validation.email(email),
        first_name=validation.name(first_name, "first_name"),
        last_name=validation.name(last_name, "last_name"),
        department_id=department_id,
        role=role,
        status=EmployeeStatus.ACTIVE,
        hired_at=hired_at or items.now(),
        terminated_at=None,
        version=1,
    )


def admin_ops(emp: Employee) -> list[transact.Op]:
    """The items every new employee writes: itself, its email identity and pointer.

    Whoever adds them checks the email's domain too (``_in_own_domain``, or, for a new
    organisation's first admin, the domains written beside it).
    """
    return [
        transact.put_new(layout.EMPLOYEE.item(emp), lambda _old: Conflict("employee id taken")),
        *_identity_ops(emp),
        *name_entry_ops(None, emp),
    ]


def _identity_ops(emp: Employee) -> list[transact.Op]:
    """The items that tie an email to the employee: its identity (sign-in) and its pointer."""
    identity = Identity(emp.email, emp.org_id, emp.emp_id)
    return [
        transact.put_new(layout.IDENTITY.item(identity), _email_taken(emp.email)),
        transact.put_new(layout.EMAIL_POINTER.item(identity), _email_taken(emp.email)),
    ]


def _name_entry_keys(emp: Employee) -> list[keys.Key]:
    """The keys of an employee's name entries: one per prefix of its folded names, "" first."""
    return [layout.NAME_ENTRY.key_of(emp, prefix=prefix) for prefix in names.prefixes(emp.first_name, emp.last_name)]


def name_entry_items(emp: Employee) -> list[Item]:
    """An employee's copies in the name partitions (``datastore.values.names``), active or not.

    Each carries every employee attribute, as the membership copy does, so a search page is
    one Query with nothing to hydrate.
    """
    return [layout.NAME_ENTRY.item(emp, prefix=prefix) for prefix in names.prefixes(emp.first_name, emp.last_name)]


def name_entry_ops(before: Employee | None, after: Employee) -> list[transact.Op]:
    """Rewrite ``after``'s name entries; delete those of ``before`` a name change left behind.

    Every entry carries the whole employee, so every write puts them all again; a name change
    also moves entries to other sort keys and prefixes, and the old ones go in the same write.
    """
    ops = [transact.put(item) for item in name_entry_items(after)]
    if before is not None:
        kept = set(_name_entry_keys(after))
        ops += [transact.delete(key) for key in _name_entry_keys(before) if key not in kept]
    return ops


def _headcount(org_id: OrgId, dept_id: DepartmentId, delta: int) -> transact.Op:
    return transact.update(
        layout.DEPARTMENT.key_at(org_id, dept_id),
        # The revision lets the drift repair (datastore/upkeep/counts.py) see that the counter moved.
        [updates.Add(layout.HEADCOUNT, items.n(delta)), updates.Add(layout.COUNTS_REVISION, items.n(1))],
        condition="attribute_exists(PK)",
        on_failed=_department_missing(),
    )


def _change(action: str, before: Employee | None, after: Employee, result: Item | None = None) -> Change:
    return Change(
        action,
        layout.EMPLOYEE.tag,
        after.emp_id,
        after.org_id,
        None if before is None else layout.EMPLOYEE.item(before),
        layout.EMPLOYEE.item(after),
        result,
    )


def _leave_department(emp: Employee) -> list[transact.Op]:
    """An active employee out of its department: its membership copy, and one off the headcount."""
    if emp.department_id is None:
        return []
    return [transact.delete(layout.MEMBERSHIP.key_of(emp)), _headcount(emp.org_id, emp.department_id, -1)]


def _on_current(
    emp_id: EmployeeId, expected_version: int | None, step: Callable[[envelope.Write, Employee], Awaitable[R]]
) -> Callable[[envelope.Write], Awaitable[R]]:
    """``step`` on the employee as it is now; without an expectedVersion, read again and retried
    when another write to them lands between the read and the write (UNVERSIONED_ATTEMPTS)."""

    def perform(write: envelope.Write) -> Awaitable[R]:
        return write.on_current(
            layout.EMPLOYEE, emp_id, expected_version, step, unversioned_attempts=UNVERSIONED_ATTEMPTS
        )

    return perform


async def create_employee(
    table: Table,
    *,
    email: str,
    first_name: str,
    last_name: str,
    department_id: DepartmentId | None,
    role: Role,
    hired_at: datetime | None = None,
    idempotency_key: str | None = None,
) -> Employee:
    """Employee, identity, email pointer, membership and headcount: one transaction."""
    org_id = table.tenant.org_id

    async def perform(write: envelope.Write) -> Employee:
        emp = new_employee(
            org_id,
            email=email,
            first_name=first_name,
            last_name=last_name,
            department_id=department_id,
            role=role,
            hired_at=hired_at,
        )
        # The domain check goes first: when it fails, it is the error reported, whatever else
        # fails (a taken email included).
        ops = [_in_own_domain(emp.org_id, emp.email), *admin_ops(emp)]
        if emp.department_id is not None:
            ops.append(transact.put(layout.MEMBERSHIP.item(emp)))
            ops.append(_headcount(emp.org_id, emp.department_id, +1))
        await write.commit(ops, _change("employee.create", None, emp))
        return emp

    inputs = {
        "email": email,
        "firstName": first_name,
        "lastName": last_name,
        "departmentId": department_id,
        "role": role,
        "hiredAt": hired_at,
    }
    return await envelope.run(table, "employee.create", idempotency_key, inputs, layout.EMPLOYEE.read, perform)


def _put_versioned(emp: Employee, expected: int) -> transact.Op:
    return locking.put_versioned(layout.EMPLOYEE, layout.EMPLOYEE.item(emp), expected)


async def update_employee(
    table: Table,
    emp_id: EmployeeId,
    *,
    expected_version: int,
    email: str | None = None,
    first_name: str | None = None,
    last_name: str | None = None,
    role: Role | None = None,
    idempotency_key: str | None = None,
) -> Employee:
    """Change an employee's own fields; a stale ``expected_version`` changes nothing."""

    async def perform(write: envelope.Write) -> Employee:
        current = await write.current(layout.EMPLOYEE, emp_id, expected_version)
        if current.erased_at is not None:
            raise Conflict("the person was erased: their record cannot be given personal data again")
        updated = replace(
            current,
            email=current.email if email is None else validation.email(email),
            first_name=(current.first_name if first_name is None else validation.name(first_name, "first_name")),
            last_name=(current.last_name if last_name is None else validation.name(last_name, "last_name")),
            role=current.role if role is None else role,
            version=current.version + 1,
        )
        ops = [_put_versioned(updated, current.version), *name_entry_ops(current, updated)]
        if updated.status is EmployeeStatus.ACTIVE and updated.department_id is not None:
            ops.append(transact.put(layout.MEMBERSHIP.item(updated)))
        if updated.email != current.email:
            same_owner = {":emp": items.s(current.emp_id)}
            ops[:0] = [_in_own_domain(updated.org_id, updated.email)]
            ops += [
                transact.delete(
                    layout.IDENTITY.key_at(current.email),
                    condition="#emp = :emp",
                    names={"#emp": layout.EMP_ID},
                    values=same_owner,
                ),
                transact.delete(layout.EMAIL_POINTER.key_at(current.org_id, current.email)),
                *_identity_ops(updated),
            ]
        await write.commit(ops, _change("employee.update", current, updated))
        return updated

    inputs = {
        "employeeId": emp_id,
        "expectedVersion": expected_version,
        "email": email,
        "firstName": first_name,
        "lastName": last_name,
        "role": role,
    }
    return await envelope.run(table, "employee.update", idempotency_key, inputs, layout.EMPLOYEE.read, perform)


async def move_employee(
    table: Table,
    emp_id: EmployeeId,
    department_id: DepartmentId,
    *,
    expected_version: int | None = None,
    idempotency_key: str | None = None,
) -> Move:
    """Move an active employee: employee, both memberships and both counters at once."""

    async def move(write: envelope.Write, current: Employee) -> Move:
        if current.status is not EmployeeStatus.ACTIVE:
            raise Conflict("an inactive employee cannot be moved")
        if current.department_id == department_id:
            return Move(current, None)
        moved = replace(current, department_id=department_id, version=current.version + 1)
        ops = [_put_versioned(moved, current.version), *name_entry_ops(current, moved)]
        ops += _leave_department(current)
        ops.append(transact.put(layout.MEMBERSHIP.item(moved)))
        ops.append(_headcount(moved.org_id, department_id, +1))
        result = layout.MOVE_RESULT.item(Move(moved, current.department_id))
        await write.commit(ops, _change("employee.move", current, moved, result))
        return Move(moved, current.department_id)

    inputs = {"employeeId": emp_id, "departmentId": department_id, "expectedVersion": expected_version}
    perform = _on_current(emp_id, expected_version, move)
    return await envelope.run(table, "employee.move", idempotency_key, inputs, layout.MOVE_RESULT.read, perform)


async def terminate_employee(
    table: Table,
    emp_id: EmployeeId,
    *,
    expected_version: int | None = None,
    idempotency_key: str | None = None,
) -> Employee:
    """Mark an employee inactive and take them out of their department's headcount."""

    async def terminate(write: envelope.Write, current: Employee) -> Employee:
        if current.status is not EmployeeStatus.ACTIVE:
            raise Conflict("the employee is already inactive")
        terminated = replace(
            current,
            status=EmployeeStatus.INACTIVE,
            terminated_at=items.now(),
            version=current.version + 1,
        )
        ops = [_put_versioned(terminated, current.version), *name_entry_ops(current, terminated)]
        ops += _leave_department(current)
        await write.commit(ops, _change("employee.terminate", current, terminated))
        return terminated

    inputs = {"employeeId": emp_id, "expectedVersion": expected_version}
    perform = _on_current(emp_id, expected_version, terminate)
    return await envelope.run(table, "employee.terminate", idempotency_key, inputs, layout.EMPLOYEE.read, perform)
