"""Employee."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from datastore import entities
from graphql_api import ids, loaders, permissions
from graphql_api.context import RequestContext
from graphql_api.types.connection import DEFAULT_PAGE_SIZE, Connection, paginate
from graphql_api.types.node import Node
from graphql_api.types.scalars import EmployeeStatus, Role

if TYPE_CHECKING:
    from graphql_api.types.application import Application
    from graphql_api.types.department import Department

Info = strawberry.Info[RequestContext, None]


@strawberry.type
class Employee(Node):
    email: str
    first_name: str
    last_name: str
    role: Role
    status: EmployeeStatus
    hired_at: datetime
    terminated_at: datetime | None
    version: int = strawberry.field(description="Pass as expectedVersion when updating.")
    emp_id: strawberry.Private[str]
    department_id: strawberry.Private[str | None]

    @classmethod
    def of(cls, employee: entities.Employee) -> Employee:
        return cls(
            id=strawberry.ID(ids.encode("Employee", employee.emp_id)),
            email=employee.email,
            first_name=employee.first_name,
            last_name=employee.last_name,
            role=employee.role,
            status=employee.status,
            hired_at=employee.hired_at,
            terminated_at=employee.terminated_at,
            version=employee.version,
            emp_id=employee.emp_id,
            department_id=employee.department_id,
        )

    @strawberry.field
    async def department(
        self, info: Info
    ) -> Annotated[Department, strawberry.lazy("graphql_api.types.department")] | None:
        from graphql_api.types.department import Department

        if self.department_id is None:
            return None
        found = await info.context.session.loaders.department.get(self.department_id)
        return None if found is None else Department.of(found)

    @strawberry.field(
        description="The employee's applications, newest first (FORBIDDEN unless yours or you are an admin)."
    )
    async def applications(
        self, info: Info, first: int = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> Connection[Annotated[Application, strawberry.lazy("graphql_api.types.application")]] | None:
        from graphql_api.types.application import Application

        permissions.check_employee_applications(info.context, self.emp_id)
        return await paginate(
            info.context,
            loaders.applications_of_employee,
            parent=self.emp_id,
            name=f"Employee.applications:{self.emp_id}",
            first=first,
            after=after,
            descending=True,
            convert=Application.of,
        )
