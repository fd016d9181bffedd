"""createEmployee, updateEmployee, moveEmployee, terminateEmployee (admins)."""

from __future__ import annotations

import asyncio
from datetime import datetime

import strawberry

from datastore import employees
from graphql_api.context import RequestContext
from graphql_api.mutations.common import (
    IDEMPOTENCY_KEY_HELP,
    decode_id,
    fresh_department,
    require_admin,
    run_write,
)
from graphql_api.types.department import Department
from graphql_api.types.employee import Employee
from graphql_api.types.scalars import Role

Info = strawberry.Info[RequestContext, None]

VERSION_HELP = "The version you last read; a stale one is a CONFLICT and changes nothing."
OPTIONAL_VERSION_HELP = VERSION_HELP + " Omit it to act on the current version."


@strawberry.input
class CreateEmployeeInput:
    email: str
    first_name: str
    last_name: str
    role: Role = Role.EMPLOYEE
    department_id: strawberry.ID | None = None
    hired_at: datetime | None = strawberry.field(default=None, description="Defaults to now.")
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class CreateEmployeePayload:
    employee: Employee
    department: Department | None = strawberry.field(description="With its new headcount.")


@strawberry.input
class UpdateEmployeeInput:
    id: strawberry.ID
    expected_version: int = strawberry.field(description=VERSION_HELP)
    email: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    role: Role | None = None
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class UpdateEmployeePayload:
    employee: Employee


@strawberry.input
class MoveEmployeeInput:
    id: strawberry.ID
    department_id: strawberry.ID
    expected_version: int | None = strawberry.field(default=None, description=OPTIONAL_VERSION_HELP)
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class MoveEmployeePayload:
    employee: Employee
    from_department: Department | None = strawberry.field(description="With its new headcount.")
    to_department: Department | None = strawberry.field(description="With its new headcount.")


@strawberry.input
class TerminateEmployeeInput:
    id: strawberry.ID
    expected_version: int | None = strawberry.field(default=None, description=OPTIONAL_VERSION_HELP)
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class TerminateEmployeePayload:
    employee: Employee
    department: Department | None = strawberry.field(description="With its new headcount.")


async def create_employee(info: Info, input: CreateEmployeeInput) -> CreateEmployeePayload | None:
    context = info.context
    require_admin(context)
    dept_id = (
        None if input.department_id is None else decode_id(input.department_id, "Department", "input.departmentId")[0]
    )
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


async def update_employee(info: Info, input: UpdateEmployeeInput) -> UpdateEmployeePayload | None:
    context = info.context
    require_admin(context)
    (emp_id,) = decode_id(input.id, "Employee", "input.id")
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


async def move_employee(info: Info, input: MoveEmployeeInput) -> MoveEmployeePayload | None:
    context = info.context
    require_admin(context)
    (emp_id,) = decode_id(input.id, "Employee", "input.id")
    (dept_id,) = decode_id(input.department_id, "Department", "input.departmentId")
    table = context.session.tenant_table()
    before = await context.session.loaders.employee.get(emp_id)
    moved = await run_write(
        context,
        employees.move_employee,
        table,
        emp_id,
        dept_id,
        expected_version=input.expected_version,
        idempotency_key=input.idempotency_key,
    )
    from_id = None if before is None or before.department_id == moved.department_id else before.department_id
    # Independent reads: one round trip, not two.
    from_department, to_department = await asyncio.gather(
        fresh_department(context, from_id), fresh_department(context, moved.department_id)
    )
    return MoveEmployeePayload(
        employee=Employee.of(moved), from_department=from_department, to_department=to_department
    )


async def terminate_employee(info: Info, input: TerminateEmployeeInput) -> TerminateEmployeePayload | None:
    context = info.context
    require_admin(context)
    (emp_id,) = decode_id(input.id, "Employee", "input.id")
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
