"""What each subscription field listens to, and who may see each of its events.

A topic says which of the organisation's audit events concern it (``matches``: cheap, no
I/O, asked of every event by the hub), checks the caller when the subscription starts
(``start``), and turns one event into what the subscriber gets (``payload``), at delivery,
with the permission functions of queries (graphql_api/schema/permissions.py) and through the
session's loaders: what a subscriber gets is what they could read by query at that moment.
``payload`` gives None for an event this subscriber may not see (it is filtered out, as a
query would leave it out); a rule that no longer lets them read the topic at all raises, and
the subscription ends with that error.

Every object is read as it is at delivery (one read of the event's round, shared by the
organisation's subscribers on the process), so a replayed event carries today's state, and
the event's own ``action`` and cursor say what happened when.
"""

from __future__ import annotations

import time
from typing import Final

import strawberry

from datastore.kinds.entities import AuditEvent, JobStatus
from datastore.table.pagination import MAX_PAGE_SIZE, PageRequest
from datastore.tenants import applications
from datastore.values import ids
from datastore.values.ids import ApplicationId, EmployeeId, JobId
from datastore.writes import audit
from graphql_api.execution import ids as global_ids
from graphql_api.execution.errors import ApiError, Code, not_found
from graphql_api.request.context import RequestContext
from graphql_api.schema import permissions
from graphql_api.schema.types.application import Application
from graphql_api.schema.types.audit_event import AuditEvent as AuditEventType
from graphql_api.schema.types.employee import Employee
from graphql_api.schema.types.job_posting import JobPosting
from graphql_api.schema.types.live import (
    ApplicationChange,
    AuditEventAdded,
    EmployeeChange,
    JobPostingChange,
    LiveEvent,
)

JOB: Final = "JobPosting"
APPLICATION: Final = "Application"
EMPLOYEE: Final = "Employee"
# The fields an application's creation records: its job and its applicant (datastore/tenants/applications.py).
_JOB_ID: Final = "jobId"
_EMP_ID: Final = "empId"
_STATUS: Final = "status"
# Pages of the caller's applications ``myApplicationChanged`` reads when it starts (AP11).
MY_APPLICATION_PAGES: Final = 10


def _changed_to(event: AuditEvent, field: str) -> str | None:
    return next((str(change.after) for change in event.changes if change.field == field and change.after), None)


def _changed_from(event: AuditEvent, field: str) -> str | None:
    return next((str(change.before) for change in event.changes if change.field == field and change.before), None)


class JobBoard:
    """``jobPostingChanged``: the organisation's job postings, each as the caller may read it."""

    name = "Subscription.jobPostingChanged"

    async def start(self, context: RequestContext) -> None:
        permissions.caller(context)

    def matches(self, event: AuditEvent) -> bool:
        return event.entity_type == JOB

    async def payload(self, context: RequestContext, event: AuditEvent) -> LiveEvent | None:
        job = await context.loaders.job.get(event.entity_id)
        if job is None:
            return None
        shown: JobPosting | None = JobPosting.of(job)
        try:
            permissions.check_job(context, job.status)  # employees: OPEN postings only, as jobPosting(id)
        except ApiError as refused:
            if refused.code is not Code.FORBIDDEN:
                raise
            # Not on the board now: this write took it off (it was OPEN before) or it never was.
            if _changed_from(event, _STATUS) != JobStatus.OPEN.value:
                return None
            shown = None
        return JobPostingChange(
            cursor="",
            action=event.action,
            job_posting_id=strawberry.ID(global_ids.encode(JOB, job.job_id)),
            job_posting=shown,
        )


class ApplicationsOfJob:
    """``applicationChanged(jobPostingId)``: one job's applications, for those who review them."""

    def __init__(self, job_id: JobId) -> None:
        self.job_id = job_id
        self.name = f"Subscription.applicationChanged:{job_id}"

    async def _check(self, context: RequestContext) -> None:
        job = await context.loaders.job.get(self.job_id)
        if job is None:
            raise not_found(JOB)
        await permissions.check_job_applications(context, job.department_id)

    async def start(self, context: RequestContext) -> None:
        await self._check(context)

    def matches(self, event: AuditEvent) -> bool:
        return event.entity_type == APPLICATION

    async def payload(self, context: RequestContext, event: AuditEvent) -> LiveEvent | None:
        loaders = context.loaders
        found = await loaders.application.get((self.job_id, event.entity_id))
        if found is None:
            return None  # an application to another job
        await self._check(context)  # no longer the department's manager: the subscription ends FORBIDDEN
        return ApplicationChange(cursor="", action=event.action, application=Application.of(found))


class MyApplications:
    """``myApplicationChanged``: the caller's own applications.

    An application's later events name it by its id alone; its job (half of its key) is in its
    creation's event. So the topic knows the caller's applications: those listed when it
    starts (AP11), those created in the reorder window before (the list is read on an index,
    which may not show one made a moment ago), and those whose creation it sees.
    """

    def __init__(self, emp_id: EmployeeId, window_ms: int) -> None:
        self.emp_id = emp_id
        self.window_ms = window_ms
        self.name = f"Subscription.myApplicationChanged:{emp_id}"
        self.jobs: dict[str, JobId] = {}

    async def start(self, context: RequestContext) -> None:
        session = context.session
        table = session.tenant_table()

        async def listed() -> dict[str, JobId]:
            found: dict[str, JobId] = {}
            request = PageRequest(first=MAX_PAGE_SIZE)
            for _page in range(MY_APPLICATION_PAGES):  # one application per job: a bound no one reaches
                page = await applications.list_employee_applications(table, self.emp_id, request)
                found.update({application.app_id: application.job_id for application in page.items})
                if not page.has_next:
                    break
                request = PageRequest(first=MAX_PAGE_SIZE, after=page.end_cursor)
            return found

        self.jobs.update(await session.run(listed))
        recent, _more = await session.run(
            audit.events_after, table, ids.id_ceiling(_now_ms() - self.window_ms), limit=1000
        )
        for event in recent:
            self.matches(event)

    def matches(self, event: AuditEvent) -> bool:
        if event.entity_type != APPLICATION:
            return False
        if event.entity_id in self.jobs:
            return True
        job_id = _changed_to(event, _JOB_ID)
        if _changed_to(event, _EMP_ID) == self.emp_id and job_id is not None:
            self.jobs[event.entity_id] = JobId(job_id)
            return True
        return False

    async def payload(self, context: RequestContext, event: AuditEvent) -> LiveEvent | None:
        job_id = self.jobs.get(event.entity_id)
        if job_id is None:
            return None
        found = await context.loaders.application.get((job_id, ApplicationId(event.entity_id)))
        if found is None:
            return None
        await permissions.check_application(context, found.emp_id, found.job_id)
        return ApplicationChange(cursor="", action=event.action, application=Application.of(found))


class Directory:
    """``employeeChanged``: the directory, with the Employee type's field rules."""

    name = "Subscription.employeeChanged"

    async def start(self, context: RequestContext) -> None:
        permissions.caller(context)

    def matches(self, event: AuditEvent) -> bool:
        return event.entity_type == EMPLOYEE

    async def payload(self, context: RequestContext, event: AuditEvent) -> LiveEvent | None:
        found = await context.loaders.employee.get(event.entity_id)
        if found is None:
            return None
        employee = Employee.of(found)
        return EmployeeChange(cursor="", action=event.action, employee=employee)


class AuditTrail:
    """``auditEventAdded``: every write, for admins, as ``organization.auditLog`` lists them."""

    name = "Subscription.auditEventAdded"

    async def start(self, context: RequestContext) -> None:
        permissions.check_audit_trail(context)

    def matches(self, event: AuditEvent) -> bool:
        return True

    async def payload(self, context: RequestContext, event: AuditEvent) -> LiveEvent | None:
        permissions.check_audit_trail(context)
        return AuditEventAdded(cursor="", action=event.action, event=AuditEventType.of(event))


def job_of(value: str) -> JobId:
    """The job a ``jobPostingId`` argument names; NOT_FOUND for an id of another type."""
    return global_ids.JOB_POSTING.decode(value, "jobPostingId")


def _now_ms() -> int:
    return int(time.time() * 1000)


LiveTopic = JobBoard | ApplicationsOfJob | MyApplications | Directory | AuditTrail
