"""Departments: AP5, AP6, and creating or renaming one (headcount is the employees' job)."""

from __future__ import annotations

from collections.abc import Sequence

from datastore import items, keys, transact, validation
from datastore.entities import Department
from datastore.errors import Conflict, InvalidInput, NotFound
from datastore.items import Item
from datastore.pagination import Page, PageRequest
from datastore.table import Table

# Passed as ``manager_id`` to leave a department without a manager.
NO_MANAGER = ""


def get_department(table: Table, dept_id: str, *, consistent: bool = False) -> Department | None:
    """AP6: one GetItem."""
    dept_id = keys.parse_ulid(dept_id, "departmentId")
    item = table.get(keys.department_key(table.tenant.org_id, dept_id), consistent=consistent)
    return None if item is None else items.department_from(item)


def get_departments(table: Table, dept_ids: Sequence[str]) -> list[Department | None]:
    org_id = table.tenant.org_id
    wanted = [keys.department_key(org_id, keys.parse_ulid(d, "departmentId")) for d in dept_ids]
    return table.get_many(wanted, items.department_from)


def list_departments(table: Table, request: PageRequest) -> Page[Department]:
    """AP5: one Query on the organisation's partition."""
    return table.query_page(
        keys.org_pk(table.tenant.org_id),
        request,
        items.department_from,
        sk_prefix=keys.department_sk_prefix(),
    )


def _manager_is_active(org_id: str, manager_id: str) -> transact.Op:
    def missing(_old: Item | None) -> InvalidInput:
        return InvalidInput("managerId", "no active employee has this id")

    return transact.check(
        keys.employee_key(org_id, manager_id),
        "#status = :active",
        names={"#status": "status"},
        values={":active": items.s("active")},
        on_failed=missing,
    )


def create_department(table: Table, *, name: str, manager_id: str | None = None) -> Department:
    org_id = table.tenant.org_id
    dept = Department(
        org_id=org_id,
        dept_id=keys.new_id(),
        name=validation.name(name),
        manager_id=None if manager_id is None else keys.parse_ulid(manager_id, "managerId"),
        headcount=0,
    )
    ops = [
        transact.put_new(
            items.department_item(dept), lambda _old: Conflict("department id taken")
        )
    ]
    if dept.manager_id is not None:
        ops.append(_manager_is_active(org_id, dept.manager_id))
    table.write(ops)
    return dept


def update_department(
    table: Table, dept_id: str, *, name: str | None = None, manager_id: str | None = None
) -> Department:
    """Rename a department or change its manager (``NO_MANAGER`` removes it).

    Only the named attributes are set, so a concurrent headcount change is never lost.
    """
    org_id = table.tenant.org_id
    dept_id = keys.parse_ulid(dept_id, "departmentId")
    sets: list[str] = []
    removes: list[str] = []
    values: dict[str, dict[str, str]] = {}
    if name is not None:
        sets.append("#name = :name")
        values[":name"] = items.s(validation.name(name))
    ops: list[transact.Op] = []
    if manager_id == NO_MANAGER:
        removes.append("managerId")
    elif manager_id is not None:
        manager_id = keys.parse_ulid(manager_id, "managerId")
        sets.append("managerId = :manager")
        values[":manager"] = items.s(manager_id)
        ops.append(_manager_is_active(org_id, manager_id))
    if not sets and not removes:
        raise InvalidInput("input", "nothing to change")
    expression = " ".join(
        part
        for part in (
            "SET " + ", ".join(sets) if sets else "",
            "REMOVE " + ", ".join(removes) if removes else "",
        )
        if part
    )

    def missing(_old: Item | None) -> NotFound:
        return NotFound("Department", dept_id)

    ops.insert(
        0,
        transact.update(
            keys.department_key(org_id, dept_id),
            expression,
            condition="attribute_exists(PK)",
            names={"#name": "name"} if name is not None else None,
            values=values or None,
            on_failed=missing,
        ),
    )
    table.write(ops)
    updated = get_department(table, dept_id, consistent=True)
    if updated is None:
        raise NotFound("Department", dept_id)
    return updated
