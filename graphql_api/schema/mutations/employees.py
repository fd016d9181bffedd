"""createEmployee, updateEmployee, moveEmployee, terminateEmployee (admins)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated

import strawberry

from datastore.tenants import employees
from graphql_api.execution import ids
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import (
    IDEMPOTENCY_KEY_HELP,
    INPUT_ARGUMENT,
    fresh_department,
    require_admin,
    run_write,
)
from graphql_api.schema.types.department import Department
from graphql_api.schema.types.employee import Employee
from graphql_api.schema.types.scalars import Role

Info = strawberry.Info[RequestContext, None]

VERSION_HELP = "The `version` you last read; a stale one is a CONFLICT and changes nothing."
OPTIONAL_VERSION_HELP = VERSION_HELP + " Omit it to act on the current version."


@strawberry.input(description="A new employee.")
class CreateEmployeeInput:
    email: str = strawberry.field(
        description="Work email address, at most 254 bytes (UTF-8) with 64 before the @ (RFC 5321); stored "
        "lower-case and unique across the platform (one in use is a CONFLICT)."
    )
    first_name: str = strawberry.field(description="Given name, 1 to 100 characters.")
    last_name: str = strawberry.field(description="Family name, 1 to 100 characters.")
    role: Role = strawberry.field(default=Role.EMPLOYEE, description="What they may do; EMPLOYEE unless given.")
    department_id: strawberry.ID | None = strawberry.field(
        default=None, description="Global id of the department to join; omit for none."
    )
    hired_at: datetime | None = strawberry.field(
        default=None, description="When they were hired (may be in the past); now when omitted."
    )
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of createEmployee.")
class CreateEmployeePayload:
    employee: Employee = strawberry.field(description="The new employee, ACTIVE, at version 1.")
    department: Department | None = strawberry.field(
        description="The department they joined, with its new headcount; null when they joined none."
    )


@strawberry.input(description="Changes to one employee; fields left out keep their values.")
class UpdateEmployeeInput:
    id: strawberry.ID = strawberry.field(description="The employee's global id.")
    expected_version: int = strawberry.field(description=VERSION_HELP)
    email: str | None = strawberry.field(
        default=None, description="A new email address, unique across the platform (one in use is a CONFLICT)."
    )
    first_name: str | None = strawberry.field(default=None, description="A new given name, 1 to 100 characters.")
    last_name: str | None = strawberry.field(default=None, description="A new family name, 1 to 100 characters.")
    role: Role | None = strawberry.field(
        default=None, description="A new role; their tokens issued under the old role stop working."
    )
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of updateEmployee.")
class UpdateEmployeePayload:
    employee: Employee = strawberry.field(description="The employee after the change, with its new version.")


@strawberry.input(description="An ACTIVE employee and the department to move them to.")
class MoveEmployeeInput:
    id: strawberry.ID = strawberry.field(description="The employee's global id.")
    department_id: strawberry.ID = strawberry.field(description="Global id of the department to move them to.")
    expected_version: int | None = strawberry.field(default=None, description=OPTIONAL_VERSION_HELP)
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of moveEmployee.")
class MoveEmployeePayload:
    employee: Employee = strawberry.field(description="The employee in their new department, with its new version.")
    from_department: Department | None = strawberry.field(
        description="The department they left, with its new headcount; null when they had none or stayed."
    )
    to_department: Department | None = strawberry.field(
        description="The department they joined, with its new headcount."
    )


@strawberry.input(description="The employee whose employment ends.")
class TerminateEmployeeInput:
    id: strawberry.ID = strawberry.field(description="The employee's global id.")
    expected_version: int | None = strawberry.field(default=None, description=OPTIONAL_VERSION_HELP)
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of terminateEmployee.")
class TerminateEmployeePayload:
    employee: Employee = strawberry.field(description="The employee, now INACTIVE with `terminatedAt` set.")
    department: Department | None = strawberry.field(
        description="The department they were in, with its new headcount; null when they had none."
    )


async def create_employee(
    info: Info, input: Annotated[CreateEmployeeInput, INPUT_ARGUMENT]
) -> CreateEmployeePayload | None:
    context = info.context
    require_admin(context)
    dept_id = None if input.department_id is None else ids.DEPARTMENT.decode(input.department_id, "input.departmentId")
    created = await run_write(
        context,
        employees.create_employee,
        context.session.tenant_table(),
        email=input.email,
        first_name=input.first_name,
        last_name=input.last_name,
        department_id=dept_id,
        role=input.role,
        hired_at=input.hired_at,
        idempotency_key=input.idempotency_key,
    )
    return CreateEmployeePayload(
        employee=Employee.of(created), department=await fresh_department(context, created.department_id)
    )


async def update_employee(
    info: Info, input: Annotated[UpdateEmployeeInput, INPUT_ARGUMENT]
) -> UpdateEmployeePayload | None:
    context = info.context
    require_admin(context)
    emp_id = ids.EMPLOYEE.decode(input.id, "input.id")
    updated = await run_write(
        context,
        employees.update_employee,
        context.session.tenant_table(),
        emp_id,
        expected_version=input.expected_version,
        email=input.email,
        first_name=input.first_name,
        last_name=input.last_name,
        role=input.role,
        idempotency_key=input.idempotency_key,
    )
    return UpdateEmployeePayload(employee=Employee.of(updated))


async def move_employee(info: Info, input: Annotated[MoveEmployeeInput, INPUT_ARGUMENT]) -> MoveEmployeePayload | None:
    context = info.context
    require_admin(context)
    emp_id = ids.EMPLOYEE.decode(input.id, "input.id")
    dept_id = ids.DEPARTMENT.decode(input.department_id, "input.departmentId")
    move = await run_write(
        context,
        employees.move_employee,
        context.session.tenant_table(),
        emp_id,
        dept_id,
        expected_version=input.expected_version,
        idempotency_key=input.idempotency_key,
    )
    # The department left comes from the write (and on a retry from its record), never from
    # a read of its own: after the first attempt the employee is already in the new one.
    # Independent reads: one round trip, not two.
    from_department, to_department = await asyncio.gather(
        fresh_department(context, move.from_department_id), fresh_department(context, move.employee.department_id)
    )
    return MoveEmployeePayload(
        employee=Employee.of(move.employee), from_department=from_department, to_department=to_department
    )


async def terminate_employee(
    info: Info, input: Annotated[TerminateEmployeeInput, INPUT_ARGUMENT]
) -> TerminateEmployeePayload | None:
    context = info.context
    require_admin(context)
    emp_id = ids.EMPLOYEE.decode(input.id, "input.id")
    terminated = await run_write(
        context,
        employees.terminate_employee,
        context.session.tenant_table(),
        emp_id,
        expected_version=input.expected_version,
        idempotency_key=input.idempotency_key,
    )
    return TerminateEmployeePayload(
        employee=Employee.of(terminated),
        department=await fresh_department(context, terminated.department_id),
    )
