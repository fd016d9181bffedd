"""Applications: AP10, AP11, applying (once, to an open job) and status transitions.

Every application write also moves its job's counters (``JobPosting.application_counts``)
in the same transaction, with ``ADD``: writes to one job's counters commute, so none reads
them first and none fails for another's change. Two transactions on the job item at the same
instant can still cancel one of them (TransactionConflict), which ``Table.write`` retries
as it is, with no re-read. The counters do not
touch the job's version: the version guards what an editor of the job saw (title,
description, department, status), which no application changes, so an application never
makes a concurrent job edit fail as stale.
"""

from __future__ import annotations

from dataclasses import replace

from datastore.errors import Conflict, InvalidInput, NotFound
from datastore.kinds import layout
from datastore.kinds.entities import (
    APPLICATION_TRANSITIONS,
    Application,
    ApplicationStatus,
    Employee,
    EmployeeStatus,
    JobPosting,
    JobStatus,
)
from datastore.table import by_id, transact, updates
from datastore.table.pagination import Page, PageQuery, PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values import items
from datastore.values.ids import ApplicationId, EmployeeId, JobId, OrgId, new_id
from datastore.values.items import Item
from datastore.writes import envelope
from datastore.writes.changes import Change


async def get_application(
    table: Table, job_id: JobId, app_id: ApplicationId, *, consistent: bool = False
) -> Application | None:
    """One GetItem: an application's key is its job's and its own id."""
    return await by_id.get(table, layout.APPLICATION, job_id, app_id, consistent=consistent)


def job_applications(org_id: OrgId, job_id: JobId) -> PageQuery[Application]:
    """AP10: one Query on the job's partition (newest first when descending)."""
    return PageQuery(
        layout.APPLICATION.partition(org_id, job_id), layout.APPLICATION.read, sk_prefix=layout.APPLICATION.sort_prefix
    )


async def list_job_applications(table: Table, job_id: JobId, request: PageRequest) -> Page[Application]:
    return await table.page(job_applications(table.tenant.org_id, job_id), request)


def employee_applications(org_id: OrgId, emp_id: EmployeeId) -> PageQuery[Application]:
    """AP11: one Query on GSI1 (newest first when descending)."""
    return PageQuery(layout.APPLICATION.index_partition(org_id, emp_id), layout.APPLICATION.read, index=keys.GSI1)


async def list_employee_applications(table: Table, emp_id: EmployeeId, request: PageRequest) -> Page[Application]:
    return await table.page(employee_applications(table.tenant.org_id, emp_id), request)


def _counters(
    org_id: OrgId,
    job_id: JobId,
    deltas: dict[ApplicationStatus, int],
    *,
    condition: str,
    names: dict[str, str],
    values: dict[str, dict[str, str]],
    on_failed: transact.FailureHandler,
) -> transact.Op:
    """``ADD`` ``deltas`` to the job's counters and raise their revision (layout.COUNTS_REVISION)."""
    adds = [updates.Add(layout.COUNTS_REVISION, items.n(1))]
    adds += [updates.Add(layout.APPLICATION_COUNTS[status], items.n(delta)) for status, delta in deltas.items()]
    return transact.update(
        layout.JOB_POSTING.key_at(org_id, job_id),
        adds,
        condition=condition,
        names=names,
        values=values,
        on_failed=on_failed,
    )


def _change(action: str, before: Application | None, after: Application) -> Change:
    return Change(
        action,
        layout.APPLICATION.tag,
        after.app_id,
        after.org_id,
        None if before is None else layout.APPLICATION.item(before),
        layout.APPLICATION.item(after),
    )


async def apply_to_job(
    table: Table, job_id: JobId, emp_id: EmployeeId, *, idempotency_key: str | None = None
) -> Application:
    """One application per (job, employee), written only while the job is open."""
    org_id = table.tenant.org_id

    async def perform(write: envelope.Write) -> Application:
        application = Application(
            org_id=org_id,
            app_id=ApplicationId(new_id()),
            job_id=job_id,
            emp_id=emp_id,
            status=ApplicationStatus.APPLIED,
            submitted_at=items.now(),
        )

        def already(_old: Item | None) -> Conflict:
            return Conflict("this employee has already applied to this job")

        def job_not_open(old: Item | None) -> Conflict | NotFound:
            if old is None:
                return NotFound(JobPosting, application.job_id)
            return Conflict(f"the job is {old[layout.STATUS]['S']}, not open")

        def applicant_inactive(old: Item | None) -> Conflict | NotFound:
            if old is None:
                return NotFound(Employee, application.emp_id)
            return Conflict("an inactive employee cannot apply")

        status = {"#status": layout.STATUS}
        ops = [
            transact.put_new(layout.APPLICATION.item(application), already),
            transact.put_new(layout.APPLICANT.item(application), already),
            # The job must be open at the moment of the write: the condition of its counter update.
            _counters(
                org_id,
                application.job_id,
                {ApplicationStatus.APPLIED: 1},
                condition="#status = :open",
                names=status,
                values={":open": items.s(JobStatus.OPEN.value)},
                on_failed=job_not_open,
            ),
            transact.check(
                layout.EMPLOYEE.key_at(org_id, application.emp_id),
                "#status = :active",
                names=status,
                values={":active": items.s(EmployeeStatus.ACTIVE.value)},
                on_failed=applicant_inactive,
            ),
        ]
        await write.commit(ops, _change("application.apply", None, application))
        return application

    inputs = {"jobId": job_id, "employeeId": emp_id}
    return await envelope.run(table, "application.apply", idempotency_key, inputs, layout.APPLICATION.read, perform)


async def _transition(
    table: Table,
    job_id: JobId,
    app_id: ApplicationId,
    target: ApplicationStatus,
    action: str,
    idempotency_key: str | None,
) -> Application:
    async def perform(write: envelope.Write) -> Application:
        current = await get_application(write.table, job_id, app_id, consistent=True)
        if current is None:
            raise NotFound(Application, app_id)
        if target not in APPLICATION_TRANSITIONS.get(current.status, frozenset()):
            raise InvalidInput("status", f"an application cannot go from {current.status} to {target}")

        def changed(_old: Item | None) -> Conflict:
            return Conflict("the application changed while it was being updated")

        def job_missing(_old: Item | None) -> NotFound:
            return NotFound(JobPosting, current.job_id)

        ops = [
            transact.update(
                layout.APPLICATION.key_of(current),
                [updates.Set(layout.STATUS, items.s(target.value))],
                condition="#status = :from",
                names={"#status": layout.STATUS},
                values={":from": items.s(current.status.value)},
                on_failed=changed,
            ),
            _counters(
                current.org_id,
                current.job_id,
                {current.status: -1, target: 1},
                condition="attribute_exists(PK)",
                names={},
                values={},
                on_failed=job_missing,
            ),
        ]
        updated = replace(current, status=target)
        await write.commit(ops, _change(action, current, updated))
        return updated

    inputs = {"jobId": job_id, "applicationId": app_id, "status": target}
    return await envelope.run(table, action, idempotency_key, inputs, layout.APPLICATION.read, perform)


async def withdraw_application(
    table: Table, job_id: JobId, app_id: ApplicationId, *, idempotency_key: str | None = None
) -> Application:
    return await _transition(
        table, job_id, app_id, ApplicationStatus.WITHDRAWN, "application.withdraw", idempotency_key
    )


async def set_application_status(
    table: Table,
    job_id: JobId,
    app_id: ApplicationId,
    status: ApplicationStatus,
    *,
    idempotency_key: str | None = None,
) -> Application:
    """A reviewer's decision; withdrawing is the applicant's, through withdraw_application."""
    if status is ApplicationStatus.WITHDRAWN:
        raise InvalidInput("status", "only the applicant can withdraw an application")
    return await _transition(table, job_id, app_id, status, "application.setStatus", idempotency_key)
