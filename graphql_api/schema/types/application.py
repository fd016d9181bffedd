"""Application."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import strawberry

from datastore.kinds import entities
from graphql_api.request.context import RequestContext
from graphql_api.schema.types import relations
from graphql_api.schema.types.node import Node, encoded_id
from graphql_api.schema.types.scalars import ApplicationStatus

if TYPE_CHECKING:
    from graphql_api.schema.types.employee import Employee
    from graphql_api.schema.types.job_posting import JobPosting

Info = strawberry.Info[RequestContext, None]


def _employee() -> type[Employee]:
    from graphql_api.schema.types.employee import Employee

    return Employee


def _job_posting() -> type[JobPosting]:
    from graphql_api.schema.types.job_posting import JobPosting

    return JobPosting


@strawberry.type(
    description="An employee's application to an internal job posting. Visible to the applicant, admins, "
    "and the manager of the job's department."
)
class Application(Node):
    id: strawberry.ID = encoded_id("Application", "job_id", "app_id")
    status: ApplicationStatus = strawberry.field(description="Where the application is in review.")
    submitted_at: datetime = strawberry.field(description="When the applicant applied.")
    app_id: strawberry.Private[str]
    job_id: strawberry.Private[str]
    emp_id: strawberry.Private[str]
    # The relations a page load gave it (types/relations.py); None: load them on demand.
    related: strawberry.Private[relations.Preloaded | None] = None

    EMPLOYEE: ClassVar[relations.Relation[Application, Employee]] = relations.Relation(
        "employee", lambda application: application.emp_id, lambda loaders: loaders.employee, _employee
    )
    JOB_POSTING: ClassVar[relations.Relation[Application, JobPosting]] = relations.Relation(
        "jobPosting", lambda application: application.job_id, lambda loaders: loaders.job, _job_posting
    )

    @classmethod
    def of(cls, application: entities.Application) -> Application:
        return cls(
            status=application.status,
            submitted_at=application.submitted_at,
            app_id=application.app_id,
            job_id=application.job_id,
            emp_id=application.emp_id,
        )

    # Synchronous resolvers: the object itself when the page loaded it, else an awaitable.
    @strawberry.field(
        description="The applicant; null if their record can no longer be read.",
        graphql_type=Annotated["Employee", strawberry.lazy("graphql_api.schema.types.employee")] | None,
        metadata=EMPLOYEE.plan_read(),
    )
    def employee(self, info: Info) -> Any:
        return Application.EMPLOYEE.resolve(self, info.context.loaders)

    @strawberry.field(
        description="The job applied to; null if it can no longer be read.",
        graphql_type=Annotated["JobPosting", strawberry.lazy("graphql_api.schema.types.job_posting")] | None,
        metadata=JOB_POSTING.plan_read(),
    )
    def job_posting(self, info: Info) -> Any:
        return Application.JOB_POSTING.resolve(self, info.context.loaders)
