"""Application."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from datastore import entities
from graphql_api import ids
from graphql_api.context import RequestContext
from graphql_api.types.node import Node
from graphql_api.types.scalars import ApplicationStatus

if TYPE_CHECKING:
    from graphql_api.types.employee import Employee
    from graphql_api.types.job_posting import JobPosting

Info = strawberry.Info[RequestContext, None]


@strawberry.type(
    description="An employee's application to an internal job posting. Visible to the applicant, admins, "
    "and the manager of the job's department."
)
class Application(Node):
    status: ApplicationStatus = strawberry.field(description="Where the application is in review.")
    submitted_at: datetime = strawberry.field(description="When the applicant applied.")
    app_id: strawberry.Private[str]
    job_id: strawberry.Private[str]
    emp_id: strawberry.Private[str]

    @classmethod
    def of(cls, application: entities.Application) -> Application:
        return cls(
            id=strawberry.ID(ids.encode("Application", application.job_id, application.app_id)),
            status=application.status,
            submitted_at=application.submitted_at,
            app_id=application.app_id,
            job_id=application.job_id,
            emp_id=application.emp_id,
        )

    @strawberry.field(description="The applicant; null if their record can no longer be read.")
    async def employee(self, info: Info) -> Annotated[Employee, strawberry.lazy("graphql_api.types.employee")] | None:
        from graphql_api.types.employee import Employee

        found = await info.context.session.loaders.employee.get(self.emp_id)
        return None if found is None else Employee.of(found)

    @strawberry.field(description="The job applied to; null if it can no longer be read.")
    async def job_posting(
        self, info: Info
    ) -> Annotated[JobPosting, strawberry.lazy("graphql_api.types.job_posting")] | None:
        from graphql_api.types.job_posting import JobPosting

        found = await info.context.session.loaders.job.get(self.job_id)
        return None if found is None else JobPosting.of(found)
