"""JobPosting."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from datastore import entities
from graphql_api import ids, loaders, permissions
from graphql_api.context import RequestContext
from graphql_api.types.connection import DEFAULT_PAGE_SIZE, Connection, paginate
from graphql_api.types.node import Node
from graphql_api.types.scalars import JobPostingStatus

if TYPE_CHECKING:
    from graphql_api.types.application import Application
    from graphql_api.types.department import Department

Info = strawberry.Info[RequestContext, None]


@strawberry.type
class JobPosting(Node):
    title: str
    description: str
    status: JobPostingStatus
    posted_at: datetime | None
    closed_at: datetime | None
    version: int = strawberry.field(description="Pass as expectedVersion when updating.")
    job_id: strawberry.Private[str]
    department_id: strawberry.Private[str]

    @classmethod
    def of(cls, job: entities.JobPosting) -> JobPosting:
        return cls(
            id=strawberry.ID(ids.encode("JobPosting", job.job_id)),
            title=job.title,
            description=job.description,
            status=job.status,
            posted_at=job.posted_at,
            closed_at=job.closed_at,
            version=job.version,
            job_id=job.job_id,
            department_id=job.department_id,
        )

    @strawberry.field
    async def department(
        self, info: Info
    ) -> Annotated[Department, strawberry.lazy("graphql_api.types.department")] | None:
        from graphql_api.types.department import Department

        found = await info.context.session.loaders.department.get(self.department_id)
        return None if found is None else Department.of(found)

    @strawberry.field(description="Applications to this job, newest first (admins and the department's manager only).")
    async def applications(
        self, info: Info, first: int = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> Connection[Annotated[Application, strawberry.lazy("graphql_api.types.application")]] | None:
        from graphql_api.types.application import Application

        await permissions.check_job_applications(info.context, self.department_id)
        return await paginate(
            info.context,
            loaders.applications_of_job,
            parent=self.job_id,
            name=f"JobPosting.applications:{self.job_id}",
            first=first,
            after=after,
            descending=True,
            convert=Application.of,
        )
