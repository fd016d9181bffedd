"""Departments: AP5, AP6, and creating or renaming one (headcount is the employees' job)."""

from __future__ import annotations

from dataclasses import replace

from datastore.errors import Conflict, InvalidInput, NotFound
from datastore.kinds import layout
from datastore.kinds.entities import Department, EmployeeStatus
from datastore.table import by_id, transact, updates
from datastore.table.pagination import Page, PageQuery, PageRequest
from datastore.table.scoped import Table
from datastore.values import items, validation
from datastore.values.ids import DepartmentId, EmployeeId, OrgId, new_id
from datastore.values.items import Item
from datastore.writes import envelope
from datastore.writes.changes import Change

# Passed as ``manager_id`` to leave a department without a manager: no employee's id.
NO_MANAGER = EmployeeId("")


async def get_department(table: Table, dept_id: DepartmentId, *, consistent: bool = False) -> Department | None:
    """AP6: one GetItem."""
    return await by_id.get(table, layout.DEPARTMENT, dept_id, consistent=consistent)


def departments_of(org_id: OrgId) -> PageQuery[Department]:
    """AP5: one Query on the organisation's partition."""
    return PageQuery(
        layout.DEPARTMENT.partition(org_id), layout.DEPARTMENT.read, sk_prefix=layout.DEPARTMENT.sort_prefix
    )


async def list_departments(table: Table, request: PageRequest) -> Page[Department]:
    return await table.page(departments_of(table.tenant.org_id), request)


def _manager_is_active(org_id: OrgId, manager_id: EmployeeId) -> transact.Op:
    def missing(_old: Item | None) -> InvalidInput:
        return InvalidInput("manager_id", "no active employee has this id")

    return transact.check(
        layout.EMPLOYEE.key_at(org_id, manager_id),
        "#status = :active",
        names={"#status": layout.STATUS},
        values={":active": items.s(EmployeeStatus.ACTIVE.value)},
        on_failed=missing,
    )


async def create_department(
    table: Table,
    *,
    name: str,
    manager_id: EmployeeId | None = None,
    idempotency_key: str | None = None,
) -> Department:
    org_id = table.tenant.org_id

    async def perform(write: envelope.Write) -> Department:
        dept = Department(
            org_id=org_id,
            dept_id=DepartmentId(new_id()),
            name=validation.name(name),
            manager_id=manager_id,
            headcount=0,
        )
        item = layout.DEPARTMENT.item(dept)
        ops = [transact.put_new(item, lambda _old: Conflict("department id taken"))]
        if dept.manager_id is not None:
            ops.append(_manager_is_active(org_id, dept.manager_id))
        change = Change("department.create", layout.DEPARTMENT.tag, dept.dept_id, org_id, None, item)
        await write.commit(ops, change)
        return dept

    inputs = {"name": name, "managerId": manager_id}
    return await envelope.run(table, "department.create", idempotency_key, inputs, layout.DEPARTMENT.read, perform)


async def update_department(
    table: Table,
    dept_id: DepartmentId,
    *,
    name: str | None = None,
    manager_id: EmployeeId | None = None,
    idempotency_key: str | None = None,
) -> Department:
    """Rename a department or change its manager (``NO_MANAGER`` removes it).

    Only the named attributes are set, so a concurrent headcount change is never lost; the
    department returned (and replayed) carries the headcount read just before the write.
    """
    org_id = table.tenant.org_id

    async def perform(write: envelope.Write) -> Department:
        actions: list[updates.Action] = []
        new_name = None if name is None else validation.name(name)
        if new_name is not None:
            actions.append(updates.Set(layout.NAME, items.s(new_name)))
        ops: list[transact.Op] = []
        new_manager = manager_id
        if manager_id == NO_MANAGER:
            actions.append(updates.Remove(layout.MANAGER_ID))
        elif manager_id is not None:
            new_manager = manager_id
            actions.append(updates.Set(layout.MANAGER_ID, items.s(new_manager)))
            ops.append(_manager_is_active(org_id, new_manager))
        if not actions:
            # No one field is at fault: the request as a whole.
            raise InvalidInput("request", "names nothing to change (name or manager_id)")
        current = await get_department(write.table, dept_id, consistent=True)
        if current is None:
            raise NotFound(Department, dept_id)
        updated = replace(
            current,
            name=current.name if new_name is None else new_name,
            manager_id=(
                current.manager_id if new_manager is None else None if new_manager == NO_MANAGER else new_manager
            ),
        )

        def missing(_old: Item | None) -> NotFound:
            return NotFound(Department, dept_id)

        ops.insert(
            0,
            transact.update(
                layout.DEPARTMENT.key_at(org_id, dept_id),
                actions,
                condition="attribute_exists(PK)",
                on_failed=missing,
            ),
        )
        change = Change(
            "department.update",
            layout.DEPARTMENT.tag,
            dept_id,
            org_id,
            layout.DEPARTMENT.item(current),
            layout.DEPARTMENT.item(updated),
        )
        await write.commit(ops, change)
        return updated

    inputs = {"departmentId": dept_id, "name": name, "managerId": manager_id}
    return await envelope.run(table, "department.update", idempotency_key, inputs, layout.DEPARTMENT.read, perform)
