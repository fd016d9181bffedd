"""Job postings: AP8, AP9, AP12, and the draft -> open -> closed lifecycle.

Every change writes all of the job's own attributes under a version condition; an open job
carries the sparse GSI1 attributes and a closed one does not, so closing removes it from AP8
in the same write. The write is an update, not a Put: the application counters on the same
item (kept by datastore/tenants/applications.py with ``ADD``) are not the job's to write, and a Put
would roll them back to whatever the editor read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from datastore.errors import Conflict, InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import JobPosting, JobStatus
from datastore.table import by_id, transact
from datastore.table.pagination import Page, PageQuery, PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values import items, validation
from datastore.values.ids import DepartmentId, JobId, OrgId, new_id
from datastore.values.items import Item
from datastore.writes import envelope, locking
from datastore.writes.changes import Change


async def get_job(table: Table, job_id: JobId, *, consistent: bool = False) -> JobPosting | None:
    """AP9: one GetItem."""
    return await by_id.get(table, layout.JOB_POSTING, job_id, consistent=consistent)


def open_jobs_of(org_id: OrgId) -> PageQuery[JobPosting]:
    """AP8: open jobs by posting time (newest first when descending); one Query on the sparse GSI1."""
    return PageQuery(layout.JOB_POSTING.index_partition(org_id), layout.JOB_POSTING.read, index=keys.GSI1)


async def list_open_jobs(table: Table, request: PageRequest) -> Page[JobPosting]:
    return await table.page(open_jobs_of(table.tenant.org_id), request)


def jobs_of(org_id: OrgId) -> PageQuery[JobPosting]:
    """AP12: every job of the organisation; job ids are ULIDs, so id order is age order."""
    return PageQuery(
        layout.JOB_POSTING.partition(org_id), layout.JOB_POSTING.read, sk_prefix=layout.JOB_POSTING.sort_prefix
    )


async def list_jobs(table: Table, request: PageRequest) -> Page[JobPosting]:
    return await table.page(jobs_of(table.tenant.org_id), request)


def _department_exists(org_id: OrgId, dept_id: DepartmentId) -> transact.Op:
    def missing(_old: Item | None) -> InvalidInput:
        return InvalidInput("department_id", "no such department")

    return transact.check(layout.DEPARTMENT.key_at(org_id, dept_id), "attribute_exists(PK)", on_failed=missing)


def _write_versioned(job: JobPosting, expected: int) -> transact.Op:
    return locking.update_versioned(layout.JOB_POSTING, layout.JOB_POSTING.item(job), expected)


def _change(action: str, before: JobPosting | None, after: JobPosting) -> Change:
    return Change(
        action,
        layout.JOB_POSTING.tag,
        after.job_id,
        after.org_id,
        None if before is None else layout.JOB_POSTING.item(before),
        layout.JOB_POSTING.item(after),
        # A replay returns the counts the write saw, as the write itself did.
        layout.JOB_POSTING.item_with_counters(after),
    )


async def create_job(
    table: Table,
    *,
    department_id: DepartmentId,
    title: str,
    description: str = "",
    idempotency_key: str | None = None,
) -> JobPosting:
    """A draft job in an existing department."""
    org_id = table.tenant.org_id

    async def perform(write: envelope.Write) -> JobPosting:
        job = JobPosting(
            org_id=org_id,
            job_id=JobId(new_id()),
            department_id=department_id,
            title=validation.title(title),
            description=validation.description(description),
            status=JobStatus.DRAFT,
            posted_at=None,
            closed_at=None,
            version=1,
        )
        ops = [
            transact.put_new(layout.JOB_POSTING.item(job), lambda _old: Conflict("job id taken")),
            _department_exists(org_id, job.department_id),
        ]
        await write.commit(ops, _change("job.create", None, job))
        return job

    inputs = {"departmentId": department_id, "title": title, "description": description}
    return await envelope.run(table, "job.create", idempotency_key, inputs, layout.JOB_POSTING.read, perform)


async def update_job(
    table: Table,
    job_id: JobId,
    *,
    expected_version: int,
    title: str | None = None,
    description: str | None = None,
    department_id: DepartmentId | None = None,
    idempotency_key: str | None = None,
) -> JobPosting:
    async def perform(write: envelope.Write) -> JobPosting:
        current = await write.current(layout.JOB_POSTING, job_id, expected_version)
        if current.status is JobStatus.CLOSED:
            raise InvalidInput("job_id", "a closed job cannot be edited")
        updated = replace(
            current,
            title=(current.title if title is None else validation.title(title)),
            description=(current.description if description is None else validation.description(description)),
            department_id=current.department_id if department_id is None else department_id,
            version=current.version + 1,
        )
        ops = [_write_versioned(updated, current.version)]
        if updated.department_id != current.department_id:
            ops.append(_department_exists(updated.org_id, updated.department_id))
        await write.commit(ops, _change("job.update", current, updated))
        return updated

    inputs = {
        "jobId": job_id,
        "expectedVersion": expected_version,
        "title": title,
        "description": description,
        "departmentId": department_id,
    }
    return await envelope.run(table, "job.update", idempotency_key, inputs, layout.JOB_POSTING.read, perform)


async def _change_status(
    table: Table,
    job_id: JobId,
    expected_version: int | None,
    idempotency_key: str | None,
    action: str,
    change: Callable[[JobPosting], JobPosting],
) -> JobPosting:
    """Read the job, let ``change`` refuse or make the next state, write it under the version."""

    async def perform(write: envelope.Write) -> JobPosting:
        current = await write.current(layout.JOB_POSTING, job_id, expected_version)
        changed = change(current)
        await write.commit([_write_versioned(changed, current.version)], _change(action, current, changed))
        return changed

    inputs = {"jobId": job_id, "expectedVersion": expected_version}
    return await envelope.run(table, action, idempotency_key, inputs, layout.JOB_POSTING.read, perform)


async def publish_job(
    table: Table,
    job_id: JobId,
    *,
    expected_version: int | None = None,
    idempotency_key: str | None = None,
) -> JobPosting:
    """Draft -> open: the job enters the open-jobs index."""

    def publish(current: JobPosting) -> JobPosting:
        if current.status is not JobStatus.DRAFT:
            raise InvalidInput("job_id", f"only a draft job can be published; this one is {current.status}")
        return replace(current, status=JobStatus.OPEN, posted_at=items.now(), version=current.version + 1)

    return await _change_status(table, job_id, expected_version, idempotency_key, "job.publish", publish)


async def close_job(
    table: Table,
    job_id: JobId,
    *,
    expected_version: int | None = None,
    idempotency_key: str | None = None,
) -> JobPosting:
    """Draft or open -> closed: the job leaves the open-jobs index in the same write."""

    def close(current: JobPosting) -> JobPosting:
        if current.status is JobStatus.CLOSED:
            raise InvalidInput("job_id", "the job is already closed")
        return replace(current, status=JobStatus.CLOSED, closed_at=items.now(), version=current.version + 1)

    return await _change_status(table, job_id, expected_version, idempotency_key, "job.close", close)
