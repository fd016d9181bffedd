"""createJobPosting, updateJobPosting, publishJobPosting, closeJobPosting (admins)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from datastore.tenants import jobs
from graphql_api.execution import ids
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import (
    IDEMPOTENCY_KEY_HELP,
    INPUT_ARGUMENT,
    require_admin,
    run_write,
)
from graphql_api.schema.mutations.employees import OPTIONAL_VERSION_HELP, VERSION_HELP
from graphql_api.schema.types.job_posting import JobPosting

Info = strawberry.Info[RequestContext, None]


@strawberry.input(description="A new job posting, created as a DRAFT.")
class CreateJobPostingInput:
    department_id: strawberry.ID = strawberry.field(description="Global id of the department that is hiring.")
    title: str = strawberry.field(description="The job's title, 1 to 200 characters.")
    description: str = strawberry.field(
        default="", description="The job's description as plain text, up to 10,000 characters."
    )
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of createJobPosting.")
class CreateJobPostingPayload:
    job_posting: JobPosting = strawberry.field(description="The new posting, a DRAFT until published.")


@strawberry.input(description="Changes to a DRAFT or OPEN job posting; fields left out keep their values.")
class UpdateJobPostingInput:
    id: strawberry.ID = strawberry.field(description="The job posting's global id.")
    expected_version: int = strawberry.field(description=VERSION_HELP)
    title: str | None = strawberry.field(default=None, description="A new title, 1 to 200 characters.")
    description: str | None = strawberry.field(
        default=None, description="A new description, plain text up to 10,000 characters (may be empty)."
    )
    department_id: strawberry.ID | None = strawberry.field(
        default=None, description="Global id of the department to move the posting to."
    )
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of updateJobPosting.")
class UpdateJobPostingPayload:
    job_posting: JobPosting = strawberry.field(description="The posting after the change, with its new version.")


@strawberry.input(description="The DRAFT job posting to open.")
class PublishJobPostingInput:
    id: strawberry.ID = strawberry.field(description="The job posting's global id.")
    expected_version: int | None = strawberry.field(default=None, description=OPTIONAL_VERSION_HELP)
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of publishJobPosting.")
class PublishJobPostingPayload:
    job_posting: JobPosting = strawberry.field(description="The posting, now OPEN with `postedAt` set.")


@strawberry.input(description="The job posting to close.")
class CloseJobPostingInput:
    id: strawberry.ID = strawberry.field(description="The job posting's global id.")
    expected_version: int | None = strawberry.field(default=None, description=OPTIONAL_VERSION_HELP)
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of closeJobPosting.")
class CloseJobPostingPayload:
    job_posting: JobPosting = strawberry.field(description="The posting, now CLOSED with `closedAt` set.")


async def create_job_posting(
    info: Info, input: Annotated[CreateJobPostingInput, INPUT_ARGUMENT]
) -> CreateJobPostingPayload | None:
    context = info.context
    require_admin(context)
    dept_id = ids.DEPARTMENT.decode(input.department_id, "input.departmentId")
    created = await run_write(
        context,
        jobs.create_job,
        context.session.tenant_table(),
        department_id=dept_id,
        title=input.title,
        description=input.description,
        idempotency_key=input.idempotency_key,
    )
    return CreateJobPostingPayload(job_posting=JobPosting.of(created))


async def update_job_posting(
    info: Info, input: Annotated[UpdateJobPostingInput, INPUT_ARGUMENT]
) -> UpdateJobPostingPayload | None:
    context = info.context
    require_admin(context)
    job_id = ids.JOB_POSTING.decode(input.id, "input.id")
    dept_id = None if input.department_id is None else ids.DEPARTMENT.decode(input.department_id, "input.departmentId")
    updated = await run_write(
        context,
        jobs.update_job,
        context.session.tenant_table(),
        job_id,
        expected_version=input.expected_version,
        title=input.title,
        description=input.description,
        department_id=dept_id,
        idempotency_key=input.idempotency_key,
    )
    return UpdateJobPostingPayload(job_posting=JobPosting.of(updated))


async def publish_job_posting(
    info: Info, input: Annotated[PublishJobPostingInput, INPUT_ARGUMENT]
) -> PublishJobPostingPayload | None:
    context = info.context
    require_admin(context)
    job_id = ids.JOB_POSTING.decode(input.id, "input.id")
    published = await run_write(
        context,
        jobs.publish_job,
        context.session.tenant_table(),
        job_id,
        expected_version=input.expected_version,
        idempotency_key=input.idempotency_key,
    )
    return PublishJobPostingPayload(job_posting=JobPosting.of(published))


async def close_job_posting(
    info: Info, input: Annotated[CloseJobPostingInput, INPUT_ARGUMENT]
) -> CloseJobPostingPayload | None:
    context = info.context
    require_admin(context)
    job_id = ids.JOB_POSTING.decode(input.id, "input.id")
    closed = await run_write(
        context,
        jobs.close_job,
        context.session.tenant_table(),
        job_id,
        expected_version=input.expected_version,
        idempotency_key=input.idempotency_key,
    )
    return CloseJobPostingPayload(job_posting=JobPosting.of(closed))
