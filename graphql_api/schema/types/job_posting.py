"""JobPosting."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import strawberry

from datastore.kinds import entities
from graphql_api.execution import loaders
from graphql_api.request.context import RequestContext
from graphql_api.schema import permissions
from graphql_api.schema.types import relations
from graphql_api.schema.types.connection import DEFAULT_PAGE_SIZE, After, Connection, First, paginate
from graphql_api.schema.types.node import Node, encoded_id
from graphql_api.schema.types.scalars import JobPostingStatus

if TYPE_CHECKING:
    from graphql_api.schema.types.application import Application
    from graphql_api.schema.types.department import Department

Info = strawberry.Info[RequestContext, None]


def _department() -> type[Department]:
    from graphql_api.schema.types.department import Department

    return Department


@strawberry.type(
    description="How many of a job's applications are in each status. Kept in the same transaction as "
    "every application write, so it is exact without counting."
)
class ApplicationCounts:
    applied: int = strawberry.field(description="Applications waiting for review (APPLIED).")
    reviewing: int = strawberry.field(description="Applications under review (REVIEWING).")
    rejected: int = strawberry.field(description="Applications turned down (REJECTED).")
    accepted: int = strawberry.field(description="Applications accepted (ACCEPTED).")
    withdrawn: int = strawberry.field(description="Applications their applicant withdrew (WITHDRAWN).")
    total: int = strawberry.field(description="Every application ever made to the job: the sum of the others.")

    @classmethod
    def of(cls, counts: entities.ApplicationCounts) -> ApplicationCounts:
        return cls(
            applied=counts.applied,
            reviewing=counts.reviewing,
            rejected=counts.rejected,
            accepted=counts.accepted,
            withdrawn=counts.withdrawn,
            total=counts.total,
        )


@strawberry.type(
    description="An internal job opening in a department. Employees see OPEN postings only; managers and "
    "admins see every status (a DRAFT or CLOSED one read by an employee is FORBIDDEN)."
)
class JobPosting(Node):
    id: strawberry.ID = encoded_id("JobPosting", "job_id")
    title: str = strawberry.field(description="The job's title, 1 to 200 characters.")
    description: str = strawberry.field(
        description="The job's description as plain text, up to 10,000 characters; may be empty."
    )
    status: JobPostingStatus = strawberry.field(description="DRAFT, OPEN or CLOSED.")
    posted_at: datetime | None = strawberry.field(
        description="When it was published (became OPEN); null if it never was."
    )
    closed_at: datetime | None = strawberry.field(description="When it was closed; null unless CLOSED.")
    version: int = strawberry.field(
        description="Increases by one with every write to the posting. Pass it as `expectedVersion` when "
        "updating, publishing or closing, so a write based on a stale read is a CONFLICT."
    )
    job_id: strawberry.Private[str]
    department_id: strawberry.Private[str]
    counts: strawberry.Private[entities.ApplicationCounts]
    # The relations a page load gave it (types/relations.py); None: load them on demand.
    related: strawberry.Private[relations.Preloaded | None] = None

    DEPARTMENT: ClassVar[relations.Relation[JobPosting, Department]] = relations.Relation(
        "department", lambda job: job.department_id, lambda loaders: loaders.department, _department
    )

    @classmethod
    def of(cls, job: entities.JobPosting) -> JobPosting:
        return cls(
            title=job.title,
            description=job.description,
            status=job.status,
            posted_at=job.posted_at,
            closed_at=job.closed_at,
            version=job.version,
            job_id=job.job_id,
            department_id=job.department_id,
            counts=job.application_counts,
        )

    @strawberry.field(
        description="The department that is hiring; null if it can no longer be read.",
        graphql_type=Annotated["Department", strawberry.lazy("graphql_api.schema.types.department")] | None,
        metadata=DEPARTMENT.plan_read(),
    )
    def department(self, info: Info) -> Any:
        return JobPosting.DEPARTMENT.resolve(self, info.context.loaders)

    @strawberry.field(
        description="How many applications the job has in each status, as of this read. Readable by whoever "
        "may read its applications (admins and the manager of its department); anyone else gets FORBIDDEN "
        "(this field null, the rest of the answer intact)."
    )
    async def application_counts(self, info: Info) -> ApplicationCounts | None:
        await permissions.check_job_applications(info.context, self.department_id)
        return ApplicationCounts.of(self.counts)

    @strawberry.field(
        description="Applications to this job, newest first. Admins and the manager of its department only; "
        "anyone else gets FORBIDDEN (this field null, the rest of the answer intact)."
    )
    async def applications(
        self, info: Info, first: First = DEFAULT_PAGE_SIZE, after: After = None
    ) -> Connection[Annotated[Application, strawberry.lazy("graphql_api.schema.types.application")]] | None:
        from graphql_api.schema.types.application import Application

        await permissions.check_job_applications(info.context, self.department_id)
        return await paginate(
            info,
            loaders.applications_of_job,
            f"JobPosting.applications:{self.job_id}",
            Application.of,
            first,
            after,
            parent=self.job_id,
            descending=True,
        )
