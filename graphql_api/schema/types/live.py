"""What a subscription delivers: one event, its cursor, and what it concerns as the subscriber may read it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

if TYPE_CHECKING:
    from graphql_api.schema.types.application import Application
    from graphql_api.schema.types.audit_event import AuditEvent
    from graphql_api.schema.types.employee import Employee
    from graphql_api.schema.types.job_posting import JobPosting


@strawberry.interface(
    description="One write delivered live, as it is in the organisation's audit trail: the same "
    "writes `organization.auditLog` lists. Each carries its cursor: subscribe again with `after` set to "
    "the last one received to get exactly what was missed."
)
class LiveEvent:
    cursor: str = strawberry.field(
        description="Where the subscription is after this event. Opaque and signed; valid for this "
        "subscription field (and its arguments) in this organisation only."
    )
    action: str = strawberry.field(
        description="What was done, as the audit trail names it (`<entity>.<verb>`): for example "
        "`job.publish`, `application.setStatus` or `employee.move`."
    )


@strawberry.type(description="A job posting of the organisation was created, changed, published or closed.")
class JobPostingChange(LiveEvent):
    job_posting_id: strawberry.ID = strawberry.field(
        description="The job posting's global id, also when `jobPosting` is null."
    )
    job_posting: Annotated[JobPosting, strawberry.lazy("graphql_api.schema.types.job_posting")] | None = (
        strawberry.field(
            description="The posting as you may read it now; null when you may not (an employee's view of a "
            "posting that has just left the job board, CLOSED or back to DRAFT) or it no longer exists."
        )
    )


@strawberry.type(description="An application was made, withdrawn, or moved to another status.")
class ApplicationChange(LiveEvent):
    application: Annotated[Application, strawberry.lazy("graphql_api.schema.types.application")] = strawberry.field(
        description="The application as you may read it now, with the same rules as `application(id)`."
    )


@strawberry.type(description="An employee of the organisation was created, changed, moved or terminated.")
class EmployeeChange(LiveEvent):
    employee: Annotated[Employee, strawberry.lazy("graphql_api.schema.types.employee")] = strawberry.field(
        description="The employee as the directory shows them now, with the same field rules as queries."
    )


@strawberry.type(description="A write was added to the organisation's audit trail.")
class AuditEventAdded(LiveEvent):
    event: Annotated[AuditEvent, strawberry.lazy("graphql_api.schema.types.audit_event")] = strawberry.field(
        description="The audit event, as `organization.auditLog` lists it."
    )
