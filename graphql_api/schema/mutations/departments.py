"""createDepartment, updateDepartment (admins)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from datastore.tenants import departments
from datastore.values.ids import EmployeeId
from graphql_api.execution import ids
from graphql_api.execution.errors import bad_input
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import (
    IDEMPOTENCY_KEY_HELP,
    INPUT_ARGUMENT,
    require_admin,
    run_write,
)
from graphql_api.schema.types.department import Department

Info = strawberry.Info[RequestContext, None]


@strawberry.input(description="A new department.")
class CreateDepartmentInput:
    name: str = strawberry.field(description="Its name, 1 to 100 characters (surrounding spaces are trimmed).")
    manager_id: strawberry.ID | None = strawberry.field(
        default=None, description="Global id of an ACTIVE employee to manage it; omit for no manager."
    )
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of createDepartment.")
class CreateDepartmentPayload:
    department: Department = strawberry.field(description="The new department, with headcount 0.")


@strawberry.input(description="Changes to one department; name at least one (else BAD_USER_INPUT).")
class UpdateDepartmentInput:
    id: strawberry.ID = strawberry.field(description="The department's global id.")
    name: str | None = strawberry.field(
        default=None, description="A new name, 1 to 100 characters; omit to keep the current one."
    )
    manager_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="Global id of an ACTIVE employee to be the new manager; omit to keep the current one, "
        "and see clearManager to remove it.",
    )
    clear_manager: bool = strawberry.field(
        default=False, description="True removes the manager (and wins over managerId)."
    )
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of updateDepartment.")
class UpdateDepartmentPayload:
    department: Department = strawberry.field(description="The department as it is after the change.")


async def create_department(
    info: Info, input: Annotated[CreateDepartmentInput, INPUT_ARGUMENT]
) -> CreateDepartmentPayload | None:
    context = info.context
    require_admin(context)
    manager_id = None if input.manager_id is None else ids.EMPLOYEE.decode(input.manager_id, "input.managerId")
    created = await run_write(
        context,
        departments.create_department,
        context.session.tenant_table(),
        name=input.name,
        manager_id=manager_id,
        idempotency_key=input.idempotency_key,
    )
    return CreateDepartmentPayload(department=Department.of(created))


async def update_department(
    info: Info, input: Annotated[UpdateDepartmentInput, INPUT_ARGUMENT]
) -> UpdateDepartmentPayload | None:
    context = info.context
    require_admin(context)
    dept_id = ids.DEPARTMENT.decode(input.id, "input.id")
    if input.name is None and input.manager_id is None and not input.clear_manager:
        raise bad_input("input", "names nothing to change (name, managerId or clearManager)")
    manager_id: EmployeeId | None = None
    if input.clear_manager:
        manager_id = departments.NO_MANAGER
    elif input.manager_id is not None:
        manager_id = ids.EMPLOYEE.decode(input.manager_id, "input.managerId")
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
