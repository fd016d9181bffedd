"""Large tenants written fast: items from the datastore's own codec, sent with BatchWriteItem.

For test and benchmark setup only. The items are exactly what the datastore's writes produce (the same
``datastore.kinds.layout`` declarations), but without the transactions, so a thousand employees take
a second instead of a minute. Counters (headcount, a job's application counts) are written
already correct.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from datastore.kinds import layout
from datastore.kinds.entities import (
    Application,
    ApplicationCounts,
    ApplicationStatus,
    Department,
    Employee,
    EmployeeStatus,
    Identity,
    JobPosting,
    JobStatus,
    Role,
)
from datastore.table.scoped import BATCH_WRITE_LIMIT, Table
from datastore.tenancy.scope import PlatformScope
from datastore.tenants import employees
from datastore.values.ids import ApplicationId, DepartmentId, EmployeeId, JobId, OrgId, new_id, new_id_at
from datastore.values.items import Item

EPOCH = datetime(2020, 1, 1, tzinfo=UTC)


async def write_items(table: Table, to_write: list[Item], *, in_flight: int = 8) -> None:
    """Put every item through ``table`` (``Table.batch_write``: 25 a BatchWriteItem, retrying
    what DynamoDB leaves unprocessed), ``in_flight`` calls at once on the event loop."""
    chunks = [to_write[i : i + BATCH_WRITE_LIMIT] for i in range(0, len(to_write), BATCH_WRITE_LIMIT)]
    slots = asyncio.Semaphore(in_flight)

    async def put(chunk: list[Item]) -> None:
        async with slots:
            await table.batch_write(chunk)

    async with asyncio.TaskGroup() as group:
        for chunk in chunks:
            group.create_task(put(chunk))


@dataclass
class Bulk:
    """Entities of one organisation, collected and then written in one go."""

    org_id: OrgId
    departments: list[Department] = field(default_factory=list)
    employees: list[Employee] = field(default_factory=list)
    jobs: list[JobPosting] = field(default_factory=list)
    applications: list[Application] = field(default_factory=list)

    def department(self, name: str, headcount: int = 0) -> Department:
        dept = Department(self.org_id, DepartmentId(new_id()), name, None, headcount)
        self.departments.append(dept)
        return dept

    def employee(
        self,
        department: Department | None,
        n: int,
        *,
        first_name: str | None = None,
        last_name: str | None = None,
        terminated: bool = False,
    ) -> Employee:
        hired = EPOCH + timedelta(hours=n)
        emp = Employee(
            org_id=self.org_id,
            emp_id=EmployeeId(new_id_at(hired)),
            email=f"person{n}.{new_id().lower()}@example.com",
            first_name=f"First{n}" if first_name is None else first_name,
            last_name=f"Last{n}" if last_name is None else last_name,
            department_id=None if department is None else department.dept_id,
            role=Role.EMPLOYEE,
            status=EmployeeStatus.INACTIVE if terminated else EmployeeStatus.ACTIVE,
            hired_at=hired,
            terminated_at=hired + timedelta(days=30) if terminated else None,
            version=1,
        )
        self.employees.append(emp)
        return emp

    def job(self, department: Department, n: int, *, open_: bool = True) -> JobPosting:
        posted = EPOCH + timedelta(days=n)
        job = JobPosting(
            org_id=self.org_id,
            job_id=JobId(new_id_at(posted)),
            department_id=department.dept_id,
            title=f"Job {n}",
            description=f"The description of job {n}.",
            status=JobStatus.OPEN if open_ else JobStatus.CLOSED,
            posted_at=posted,
            closed_at=None if open_ else posted + timedelta(days=1),
            version=1,
        )
        self.jobs.append(job)
        return job

    def apply(self, job: JobPosting, employee: Employee, n: int) -> Application:
        submitted = EPOCH + timedelta(minutes=n)
        app = Application(
            org_id=self.org_id,
            app_id=ApplicationId(new_id_at(submitted)),
            job_id=job.job_id,
            emp_id=employee.emp_id,
            status=ApplicationStatus.APPLIED,
            submitted_at=submitted,
        )
        self.applications.append(app)
        return app

    def items(self) -> list[Item]:
        out: list[Item] = [layout.DEPARTMENT.item(d) for d in self.departments]
        for emp in self.employees:
            identity = Identity(emp.email, emp.org_id, emp.emp_id)
            out += [layout.EMPLOYEE.item(emp), layout.EMAIL_POINTER.item(identity), layout.IDENTITY.item(identity)]
            out += employees.name_entry_items(emp)
            # A terminated employee keeps its departmentId but has left the department's list.
            if emp.department_id is not None and emp.status is EmployeeStatus.ACTIVE:
                out.append(layout.MEMBERSHIP.item(emp))
        applied: Counter[str] = Counter(app.job_id for app in self.applications)
        for job in self.jobs:
            counts = ApplicationCounts(applied=applied[job.job_id])
            out.append(layout.JOB_POSTING.item_with_counters(replace(job, application_counts=counts)))
        for app in self.applications:
            out += [layout.APPLICATION.item(app), layout.APPLICANT.item(app)]
        return out

    async def write(self, table: Table) -> None:
        """Write the organisation's items through any Table of the table: as its provisioning
        platform operator, whose scope covers its partitions and its employees' identity items."""
        await write_items(table.with_scope(PlatformScope(provisioning=self.org_id)), self.items())
