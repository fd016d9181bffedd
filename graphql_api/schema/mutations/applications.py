"""applyToJob, withdrawApplication (the applicant), setApplicationStatus (reviewers)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from datastore.kinds.entities import Role
from datastore.tenants import applications
from graphql_api.execution import ids
from graphql_api.execution.errors import forbidden, not_found
from graphql_api.request.context import RequestContext
from graphql_api.schema import permissions
from graphql_api.schema.mutations.common import IDEMPOTENCY_KEY_HELP, INPUT_ARGUMENT, run_write
from graphql_api.schema.types.application import Application
from graphql_api.schema.types.scalars import ApplicationStatus

Info = strawberry.Info[RequestContext, None]


@strawberry.input(description="The job to apply to; the applicant is always the signed-in employee.")
class ApplyToJobInput:
    job_posting_id: strawberry.ID = strawberry.field(description="The OPEN job posting's global id.")
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of applyToJob.")
class ApplyToJobPayload:
    application: Application = strawberry.field(description="The new application, APPLIED.")


@strawberry.input(description="The application to withdraw.")
class WithdrawApplicationInput:
    id: strawberry.ID = strawberry.field(description="The application's global id.")
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of withdrawApplication.")
class WithdrawApplicationPayload:
    application: Application = strawberry.field(description="The application, now WITHDRAWN.")


@strawberry.input(description="A reviewer's decision on one application.")
class SetApplicationStatusInput:
    id: strawberry.ID = strawberry.field(description="The application's global id.")
    status: ApplicationStatus = strawberry.field(
        description="The new status: REVIEWING or REJECTED from APPLIED; ACCEPTED or REJECTED from "
        "REVIEWING. WITHDRAWN is the applicant's (withdrawApplication)."
    )
    idempotency_key: str | None = strawberry.field(default=None, description=IDEMPOTENCY_KEY_HELP)


@strawberry.type(description="The result of setApplicationStatus.")
class SetApplicationStatusPayload:
    application: Application = strawberry.field(description="The application with its new status.")


async def apply_to_job(info: Info, input: Annotated[ApplyToJobInput, INPUT_ARGUMENT]) -> ApplyToJobPayload | None:
    """Every employee applies as themselves (an API key is no employee: FORBIDDEN)."""
    context = info.context
    applicant = permissions.person(context)
    job_id = ids.JOB_POSTING.decode(input.job_posting_id, "input.jobPostingId")
    created = await run_write(
        context,
        applications.apply_to_job,
        context.session.tenant_table(),
        job_id,
        applicant,
        idempotency_key=input.idempotency_key,
    )
    return ApplyToJobPayload(application=Application.of(created))


async def withdraw_application(
    info: Info, input: Annotated[WithdrawApplicationInput, INPUT_ARGUMENT]
) -> WithdrawApplicationPayload | None:
    """The applicant withdraws; an admin may too."""
    context = info.context
    caller = permissions.caller(context)
    job_id, app_id = ids.APPLICATION.decode(input.id, "input.id")
    current = await context.loaders.application.get((job_id, app_id))
    if current is None:
        raise not_found("Application")
    if caller.role is not Role.ADMIN and current.emp_id != caller.subject:
        raise forbidden("only the applicant may withdraw an application")
    withdrawn = await run_write(
        context,
        applications.withdraw_application,
        context.session.tenant_table(),
        job_id,
        app_id,
        idempotency_key=input.idempotency_key,
    )
    return WithdrawApplicationPayload(application=Application.of(withdrawn))


async def set_application_status(
    info: Info, input: Annotated[SetApplicationStatusInput, INPUT_ARGUMENT]
) -> SetApplicationStatusPayload | None:
    """Admins, and the manager of the job's department."""
    context = info.context
    permissions.caller(context)
    job_id, app_id = ids.APPLICATION.decode(input.id, "input.id")
    job = await context.loaders.job.get(job_id)
    if job is None or await context.loaders.application.get((job_id, app_id)) is None:
        raise not_found("Application")
    if not permissions.is_admin(context) and not await permissions.manages(context, job.department_id):
        raise forbidden("only admins and the department's manager may review applications")
    updated = await run_write(
        context,
        applications.set_application_status,
        context.session.tenant_table(),
        job_id,
        app_id,
        input.status,
        idempotency_key=input.idempotency_key,
    )
    return SetApplicationStatusPayload(application=Application.of(updated))
