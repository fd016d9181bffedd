"""Employee."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import strawberry

from datastore.kinds import entities
from datastore.table.pagination import Page
from graphql_api.execution import fields, loaders
from graphql_api.request.context import RequestContext
from graphql_api.schema import permissions
from graphql_api.schema.types import relations
from graphql_api.schema.types.connection import (
    DEFAULT_PAGE_SIZE,
    After,
    Connection,
    First,
    paginate,
    prefetch_page,
)
from graphql_api.schema.types.node import Node, encoded_id
from graphql_api.schema.types.scalars import EmployeeStatus, Role

if TYPE_CHECKING:
    from graphql_api.schema.types.application import Application
    from graphql_api.schema.types.department import Department

Info = strawberry.Info[RequestContext, None]


def _department() -> type[Department]:
    from graphql_api.schema.types.department import Department

    return Department


def _prefetch_applications(
    context: RequestContext, emp_id: str, arguments: Mapping[str, Any]
) -> asyncio.Future[Page[Any]] | None:
    """``applications``' first page for ``emp_id``, started before the employee is read (``me``
    knows its id: the caller's); nothing when the caller may not see them."""
    if not permissions.may_read_employee_applications(context, emp_id):
        return None
    return prefetch_page(context, loaders.applications_of_employee, emp_id, arguments, descending=True)


@strawberry.type(
    description="A person in an organisation's directory, active or not. Every member of the organisation "
    "can read it; only `applications` is restricted."
)
class Employee(Node):
    id: strawberry.ID = encoded_id("Employee", "emp_id")
    email: str = strawberry.field(
        description="Work email address, lower-case; unique across the whole platform and used to sign in. "
        "Empty for an erased person (`erasedAt`)."
    )
    first_name: str = strawberry.field(
        description="Given name, 1 to 100 characters; empty for an erased person (`erasedAt`)."
    )
    last_name: str = strawberry.field(
        description="Family name, 1 to 100 characters; empty for an erased person (`erasedAt`)."
    )
    role: Role = strawberry.field(description="What they may do in the organisation.")
    status: EmployeeStatus = strawberry.field(description="ACTIVE while employed; INACTIVE once terminated.")
    hired_at: datetime = strawberry.field(description="When they were hired (the directory's default order).")
    terminated_at: datetime | None = strawberry.field(
        description="When terminateEmployee ended their employment; null while ACTIVE."
    )
    version: int = strawberry.field(
        description="Increases by one with every write to the employee. Pass it as `expectedVersion` when "
        "updating, moving or terminating, so a write based on a stale read is a CONFLICT."
    )
    erased_at: datetime | None = strawberry.field(
        description="When erasePerson erased them; null otherwise. An erased person is a tombstone: `email`, "
        "`firstName` and `lastName` are empty strings and no name search finds them, but their id, role, "
        "status, department and dates stay, so applications and the audit trail still point at them (show "
        "them as an erased person). Their record can no longer be updated."
    )
    emp_id: strawberry.Private[str]
    department_id: strawberry.Private[str | None]
    # The relations a page load gave it (types/relations.py); None: load them on demand.
    related: strawberry.Private[relations.Preloaded | None] = None

    DEPARTMENT: ClassVar[relations.Relation[Employee, Department]] = relations.Relation(
        "department", lambda employee: employee.department_id, lambda loaders: loaders.department, _department
    )

    @classmethod
    def of(cls, employee: entities.Employee) -> Employee:
        return cls(
            email=employee.email,
            first_name=employee.first_name,
            last_name=employee.last_name,
            role=employee.role,
            status=employee.status,
            hired_at=employee.hired_at,
            terminated_at=employee.terminated_at,
            version=employee.version,
            erased_at=employee.erased_at,
            emp_id=employee.emp_id,
            department_id=employee.department_id,
        )

    @strawberry.field(
        description="The department they belong to; null when they belong to none.",
        graphql_type=Annotated["Department", strawberry.lazy("graphql_api.schema.types.department")] | None,
        metadata=DEPARTMENT.plan_read(),
    )
    def department(self, info: Info) -> Any:
        return Employee.DEPARTMENT.resolve(self, info.context.loaders)

    @strawberry.field(
        description="The employee's job applications, newest first. FORBIDDEN (this field null, the rest "
        "of the answer intact) unless they are your own or you are an admin.",
        metadata=fields.prefetch(_prefetch_applications),
    )
    async def applications(
        self, info: Info, first: First = DEFAULT_PAGE_SIZE, after: After = None
    ) -> Connection[Annotated[Application, strawberry.lazy("graphql_api.schema.types.application")]] | None:
        from graphql_api.schema.types.application import Application

        permissions.check_employee_applications(info.context, self.emp_id)
        return await paginate(
            info,
            loaders.applications_of_employee,
            f"Employee.applications:{self.emp_id}",
            Application.of,
            first,
            after,
            parent=self.emp_id,
            descending=True,
        )
