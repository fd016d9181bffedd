"""createJobPosting, updateJobPosting, publishJobPosting, closeJobPosting (admins)."""

from __future__ import annotations

from typing import Final

import strawberry

from datastore import jobs
from graphql_api.context import RequestContext
from graphql_api.mutations.common import IDEMPOTENCY_KEY_HELP, decode_id, require_admin, run_write
from graphql_api.mutations.employees import OPTIONAL_VERSION_HELP, VERSION_HELP
from graphql_api.types.job_posting import JobPosting

Info = strawberry.Info[RequestContext, None]

# The datastore names the job "jobId"; these inputs call it "id".
JOB_ID_IS_INPUT_ID: Final = {"jobId": "id"}


@strawberry.input
class CreateJobPostingInput:
    department_id: strawberry.ID
    title: str
    description: str = ""
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class CreateJobPostingPayload:
    job_posting: JobPosting = strawberry.field(description="A draft until published.")


@strawberry.input
class UpdateJobPostingInput:
    id: strawberry.ID
    expected_version: int = strawberry.field(description=VERSION_HELP)
    title: str | None = None
    description: str | None = None
    department_id: strawberry.ID | None = None
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class UpdateJobPostingPayload:
    job_posting: JobPosting


@strawberry.input
class PublishJobPostingInput:
    id: strawberry.ID
    expected_version: int | None = strawberry.field(default=None, description=OPTIONAL_VERSION_HELP)
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class PublishJobPostingPayload:
    job_posting: JobPosting


@strawberry.input
class CloseJobPostingInput:
    id: strawberry.ID
    expected_version: int | None = strawberry.field(default=None, description=OPTIONAL_VERSION_HELP)
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type
class CloseJobPostingPayload:
    job_posting: JobPosting


async def create_job_posting(info: Info, input: CreateJobPostingInput) -> CreateJobPostingPayload | None:
    context = info.context
    require_admin(context)
    (dept_id,) = decode_id(input.department_id, "Department", "input.departmentId")
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


async def update_job_posting(info: Info, input: UpdateJobPostingInput) -> UpdateJobPostingPayload | None:
    context = info.context
    require_admin(context)
    (job_id,) = decode_id(input.id, "JobPosting", "input.id")
    dept_id = (
        None if input.department_id is None else decode_id(input.department_id, "Department", "input.departmentId")[0]
    )
    updated = await run_write(
        context,
        jobs.update_job,
        context.session.tenant_table(),
        job_id,
        fields=JOB_ID_IS_INPUT_ID,
        expected_version=input.expected_version,
        title=input.title,
        description=input.description,
        department_id=dept_id,
        idempotency_key=input.idempotency_key,
    )
    return UpdateJobPostingPayload(job_posting=JobPosting.of(updated))


async def publish_job_posting(info: Info, input: PublishJobPostingInput) -> PublishJobPostingPayload | None:
    context = info.context
    require_admin(context)
    (job_id,) = decode_id(input.id, "JobPosting", "input.id")
    published = await run_write(
        context,
        jobs.publish_job,
        context.session.tenant_table(),
        job_id,
        fields=JOB_ID_IS_INPUT_ID,
        expected_version=input.expected_version,
        idempotency_key=input.idempotency_key,
    )
    return PublishJobPostingPayload(job_posting=JobPosting.of(published))


async def close_job_posting(info: Info, input: CloseJobPostingInput) -> CloseJobPostingPayload | None:
    context = info.context
    require_admin(context)
    (job_id,) = decode_id(input.id, "JobPosting", "input.id")
    closed = await run_write(
        context,
        jobs.close_job,
        context.session.tenant_table(),
        job_id,
        fields=JOB_ID_IS_INPUT_ID,
        expected_version=input.expected_version,
        idempotency_key=input.idempotency_key,
    )
    return CloseJobPostingPayload(job_posting=JobPosting.of(closed))
