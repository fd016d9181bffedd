"""createDepartment, updateDepartment (admins)."""

from __future__ import annotations

import strawberry

from datastore import departments
from graphql_api.context import RequestContext
from graphql_api.errors import bad_input
from graphql_api.mutations.common import IDEMPOTENCY_KEY_HELP, decode_id, require_admin, run_write
from graphql_api.types.department import Department

Info = strawberry.Info[RequestContext, None]


@strawberry.input
class CreateDepartmentInput:
    name: str
    manager_id: strawberry.ID | None = None
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class CreateDepartmentPayload:
    department: Department


@strawberry.input
class UpdateDepartmentInput:
    id: strawberry.ID
    name: str | None = None
    manager_id: strawberry.ID | None = strawberry.field(
        default=None, description="The new manager; see clearManager to remove one."
    )
    clear_manager: bool = False
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class UpdateDepartmentPayload:
    department: Department


async def create_department(info: Info, input: CreateDepartmentInput) -> CreateDepartmentPayload | None:
    context = info.context
    require_admin(context)
    manager_id = None if input.manager_id is None else decode_id(input.manager_id, "Employee", "input.managerId")[0]
    created = await run_write(
        context,
        departments.create_department,
        context.session.tenant_table(),
        name=input.name,
        manager_id=manager_id,
        idempotency_key=input.idempotency_key,
    )
    return CreateDepartmentPayload(department=Department.of(created))


async def update_department(info: Info, input: UpdateDepartmentInput) -> UpdateDepartmentPayload | None:
    context = info.context
    require_admin(context)
    (dept_id,) = decode_id(input.id, "Department", "input.id")
    if input.name is None and input.manager_id is None and not input.clear_manager:
        raise bad_input("input", "names nothing to change (name, managerId or clearManager)")
    manager_id: str | None = None
    if input.clear_manager:
        manager_id = departments.NO_MANAGER
    elif input.manager_id is not None:
        manager_id = decode_id(input.manager_id, "Employee", "input.managerId")[0]
    updated = await run_write(
        context,
        departments.update_department,
        context.session.tenant_table(),
        dept_id,
        name=input.name,
        manager_id=manager_id,
        idempotency_key=input.idempotency_key,
    )
    return UpdateDepartmentPayload(department=Department.of(updated))
