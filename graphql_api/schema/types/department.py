"""Department."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import strawberry

from datastore.kinds import entities
from graphql_api.execution import loaders
from graphql_api.request.context import RequestContext
from graphql_api.schema.types import relations
from graphql_api.schema.types.connection import DEFAULT_PAGE_SIZE, After, Connection, First, paginate
from graphql_api.schema.types.node import Node, encoded_id

if TYPE_CHECKING:
    from graphql_api.schema.types.employee import Employee

Info = strawberry.Info[RequestContext, None]


def _employee() -> type[Employee]:
    from graphql_api.schema.types.employee import Employee

    return Employee


@strawberry.type(description="A team inside an organisation, with an optional manager. Every member can read it.")
class Department(Node):
    id: strawberry.ID = encoded_id("Department", "dept_id")
    name: str = strawberry.field(description="The department's name, 1 to 100 characters.")
    headcount: int = strawberry.field(
        description="How many ACTIVE employees belong to it; kept exact by every create, move and termination."
    )
    dept_id: strawberry.Private[str]
    manager_id: strawberry.Private[str | None]
    # The relations a page load gave it (types/relations.py); None: load them on demand.
    related: strawberry.Private[relations.Preloaded | None] = None

    MANAGER: ClassVar[relations.Relation[Department, Employee]] = relations.Relation(
        "manager", lambda department: department.manager_id, lambda loaders: loaders.employee, _employee
    )

    @classmethod
    def of(cls, department: entities.Department) -> Department:
        return cls(
            name=department.name,
            headcount=department.headcount,
            dept_id=department.dept_id,
            manager_id=department.manager_id,
        )

    @strawberry.field(
        description="The employee who manages it and reviews applications to its jobs; null when it has none.",
        graphql_type=Annotated["Employee", strawberry.lazy("graphql_api.schema.types.employee")] | None,
        metadata=MANAGER.plan_read(),
    )
    def manager(self, info: Info) -> Any:
        return Department.MANAGER.resolve(self, info.context.loaders)

    @strawberry.field(
        description="The department's ACTIVE employees, in employee-id order (the order their records were created)."
    )
    async def employees(
        self, info: Info, first: First = DEFAULT_PAGE_SIZE, after: After = None
    ) -> Connection[Annotated[Employee, strawberry.lazy("graphql_api.schema.types.employee")]]:
        from graphql_api.schema.types.employee import Employee

        return await paginate(
            info,
            loaders.employees_of_department,
            f"Department.employees:{self.dept_id}",
            Employee.of,
            first,
            after,
            parent=self.dept_id,
        )
