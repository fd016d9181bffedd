"""A job's application counts: kept in every application write's transaction, never lost.

Real threads against DynamoDB Local; the counts are compared with a recount of the job's
application items (AP10) after the writes.
"""

from __future__ import annotations

import inspect
import random
from collections import Counter
from collections.abc import Callable
from functools import partial

from datastore.aws.calls import CallLog
from datastore.aws.client import AsyncDynamo
from datastore.errors import Conflict, InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import ApplicationCounts, ApplicationStatus, JobPosting
from datastore.table.scoped import Table
from datastore.tenants import applications, jobs
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.faults import TRANSACTION_CONFLICT, injected
from tests.datastore.support import all_pages
from tests.datastore.test_invariants import outcomes, race

APPLICANTS = 20


def open_job(tenant: Tenant, title: str = "Welder") -> JobPosting:
    job = run(jobs.create_job(tenant.table, department_id=tenant.department().dept_id, title=title))
    return run(jobs.publish_job(tenant.table, job.job_id))


def recount(table: Table, job_id: str) -> ApplicationCounts:
    """The counts from the application items themselves (AP10, every page)."""
    found = all_pages(lambda request: applications.list_job_applications(table, job_id, request))
    by_status = Counter(app.status.value for app in found)
    return ApplicationCounts(**{status.value: by_status[status.value] for status in ApplicationStatus})


def stored(table: Table, job_id: str) -> ApplicationCounts:
    job = run(jobs.get_job(table, job_id, consistent=True))
    assert job is not None
    return job.application_counts


def test_apply_to_job__20_concurrent_applicants__counts_equal_recount(tenant: Tenant, call_log: CallLog) -> None:
    job = open_job(tenant)
    people = [tenant.employee() for _ in range(APPLICANTS)]
    start = len(call_log.snapshot())

    results = race([partial(applications.apply_to_job, tenant.table, job.job_id, p.emp_id) for p in people])

    assert outcomes(results) == Counter(ok=APPLICANTS)
    assert stored(tenant.table, job.job_id) == recount(tenant.table, job.job_id) == ApplicationCounts(applied=20)
    job_pk = layout.JOB_POSTING.key_at(tenant.org_id, job.job_id).pk
    tries = [
        c for c in call_log.snapshot()[start:] if c.operation == "TransactWriteItems" and job_pk in c.partition_keys()
    ]
    # Every try beyond one per applicant was a TransactionConflict on the job item, retried.
    print(f"\n20 concurrent applies to one job: {APPLICANTS} succeeded after {len(tries)} transactions")
    assert len(tries) >= APPLICANTS


def test_transitions__concurrent_withdrawals_and_decisions__counts_equal_recount(tenant: Tenant) -> None:
    job = open_job(tenant)
    apps = [
        run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id)) for _ in range(APPLICANTS)
    ]
    chooser = random.Random(13)
    tasks = []
    for app in apps:
        first = chooser.choice([ApplicationStatus.REVIEWING, ApplicationStatus.REJECTED, ApplicationStatus.WITHDRAWN])

        def move(app_id: str = app.app_id, first: ApplicationStatus = first) -> None:
            if first is ApplicationStatus.WITHDRAWN:
                run(applications.withdraw_application(tenant.table, job.job_id, app_id))
                return
            run(applications.set_application_status(tenant.table, job.job_id, app_id, first))
            if first is ApplicationStatus.REVIEWING:
                run(applications.set_application_status(tenant.table, job.job_id, app_id, ApplicationStatus.ACCEPTED))

        tasks.append(move)
        # A second, racing decision on the same application: one of the two loses cleanly.
        tasks.append(partial(applications.withdraw_application, tenant.table, job.job_id, app.app_id))

    results = race([partial(_refusal_as_result, task) for task in tasks])

    assert set(outcomes(results)) <= {"ok", "Conflict", "InvalidInput"}
    counts = stored(tenant.table, job.job_id)
    assert counts == recount(tenant.table, job.job_id)
    assert counts.total == APPLICANTS
    assert counts.withdrawn > 0 and counts.applied == 0


def _refusal_as_result(task: Callable[[], object]) -> object:
    """A decision on an application already decided is refused (InvalidInput), like a lost race."""
    try:
        result = task()
        return run(result) if inspect.isawaitable(result) else result
    except InvalidInput as error:
        return error


def test_apply_to_job__does_not_change_the_job_version(tenant: Tenant) -> None:
    job = open_job(tenant)
    run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id))

    after = run(jobs.get_job(tenant.table, job.job_id, consistent=True))

    assert after is not None and after.version == job.version


def test_update_job__read_before_applications__keeps_their_counts(tenant: Tenant) -> None:
    job = open_job(tenant)  # the editor's read: no applications yet
    run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id))
    run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id))

    edited = run(jobs.update_job(tenant.table, job.job_id, expected_version=job.version, title="Senior welder"))
    closed = run(jobs.close_job(tenant.table, job.job_id, expected_version=edited.version))

    assert closed.version == job.version + 2
    assert stored(tenant.table, job.job_id) == ApplicationCounts(applied=2)


def test_update_job__racing_applications__every_count_kept(tenant: Tenant) -> None:
    job = open_job(tenant)
    people = [tenant.employee() for _ in range(10)]

    def retitle(n: int) -> JobPosting:
        current = run(jobs.get_job(tenant.table, job.job_id, consistent=True))
        assert current is not None
        return run(jobs.update_job(tenant.table, job.job_id, expected_version=current.version, title=f"Welder {n}"))

    tasks = [partial(applications.apply_to_job, tenant.table, job.job_id, p.emp_id) for p in people]
    tasks += [partial(retitle, n) for n in range(10)]
    results = race(tasks)

    # Applications never make an edit stale; only edits racing each other do.
    assert sum(1 for r in results if isinstance(r, Conflict)) < 10
    assert stored(tenant.table, job.job_id) == recount(tenant.table, job.job_id) == ApplicationCounts(applied=10)


def test_job__item_without_counters__reads_zeros(tenant: Tenant) -> None:
    job = open_job(tenant)
    item = run(tenant.table.get(layout.JOB_POSTING.key_at(tenant.org_id, job.job_id), consistent=True))

    assert item is not None
    assert not set(layout.APPLICATION_COUNTS.values()) & set(item)
    assert stored(tenant.table, job.job_id) == ApplicationCounts()


def test_update_job__replayed__returns_the_counts_it_saw(tenant: Tenant) -> None:
    job = open_job(tenant)
    run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id))

    first = run(
        jobs.update_job(tenant.table, job.job_id, expected_version=job.version, title="A", idempotency_key="k1")
    )
    replay = run(
        jobs.update_job(tenant.table, job.job_id, expected_version=job.version, title="A", idempotency_key="k1")
    )

    assert first.application_counts == replay.application_counts == ApplicationCounts(applied=1)


def test_application_counts__total__sums_every_status() -> None:
    counts = ApplicationCounts(applied=1, reviewing=2, rejected=3, accepted=4, withdrawn=5)

    assert counts.total == 15
    assert [counts.of(status) for status in ApplicationStatus] == [1, 2, 3, 4, 5]


def test_apply_to_job__20_concurrent_with_transaction_conflicts__retried_and_counted_once(
    tenant: Tenant, dynamo: AsyncDynamo, call_log: CallLog
) -> None:
    # DynamoDB Local serialises transactions instead of cancelling them: AWS's
    # TransactionConflict on the hot job item is injected at the client boundary (faults.py).
    job = open_job(tenant)
    people = [tenant.employee() for _ in range(APPLICANTS)]
    before = call_log.count("TransactWriteItems")

    with injected(dynamo) as faults:
        faults.every(3, TRANSACTION_CONFLICT)
        results = race([partial(applications.apply_to_job, tenant.table, job.job_id, p.emp_id) for p in people])

    # The call log records each transaction once, its retries inside it; the client's send hook
    # sees every attempt.
    calls_made = call_log.count("TransactWriteItems") - before
    tries = len(faults.sent)
    print(
        f"\n20 concurrent applies, every 3rd transaction conflicting: {APPLICANTS} succeeded, "
        f"{faults.injected} conflicts retried, {tries} transactions"
    )
    assert outcomes(results) == Counter(ok=APPLICANTS)
    assert calls_made == APPLICANTS
    assert faults.injected > 0 and tries == APPLICANTS + faults.injected
    assert stored(tenant.table, job.job_id) == recount(tenant.table, job.job_id) == ApplicationCounts(applied=20)
