"""Drift repair (datastore/upkeep/counts.py): counters corrupted behind the datastore's back, then
recounted, reported and repaired, also while moves, applications and withdrawals run.
"""

from __future__ import annotations

import contextlib
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from datastore.aws.calls import CallLog
from datastore.dev.seed import Bulk
from datastore.errors import Conflict, InvalidInput, Unavailable
from datastore.kinds import layout
from datastore.kinds.entities import ApplicationCounts
from datastore.tenancy import keys
from datastore.tenants import applications, employees
from datastore.upkeep import counts
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.support import assert_headcounts_hold
from tests.datastore.tenants.test_application_counts import open_job, recount, stored

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEPARTMENTS = 6
JOBS = 3
WRITERS = 3


def corrupt(client: DynamoDBClient, table_name: str, key: keys.Key, **values: int | None) -> None:
    """Set (or, with None, remove) counters straight in DynamoDB, as a write skipping the
    transaction path would: no revision raised, no item changed."""
    sets = {name: value for name, value in values.items() if value is not None}
    removes = [name for name, value in values.items() if value is None]
    names = {f"#n{i}": name for i, name in enumerate(values)}
    by_name = {name: alias for alias, name in names.items()}
    expression = ""
    if sets:
        expression += "SET " + ", ".join(f"{by_name[name]} = :v{i}" for i, name in enumerate(sets))
    if removes:
        expression += " REMOVE " + ", ".join(by_name[name] for name in removes)
    params: dict[str, object] = {
        "TableName": table_name,
        "Key": key.wire(),
        "UpdateExpression": expression.strip(),
        "ExpressionAttributeNames": names,
    }
    if sets:
        params["ExpressionAttributeValues"] = {f":v{i}": {"N": str(value)} for i, value in enumerate(sets.values())}
    client.update_item(**params)  # type: ignore[arg-type]  # boto3's stubs want literal TypedDicts


def test_check_organization__clean_tenant__reports_nothing_with_queries_and_gets_only(
    tenant: Tenant, call_log: CallLog
) -> None:
    dept = tenant.department()
    job = open_job(tenant)
    run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee(dept).emp_id))
    start = len(call_log.snapshot())

    report = run(counts.check_organization(tenant.table, fix=True))

    assert report.drifts == []
    assert (report.departments, report.jobs) == (2, 1)  # the job's own department and ``dept``
    operations = {c.operation for c in call_log.snapshot()[start:]}
    assert operations == {"Query", "GetItem"}


def test_check_organization__corrupted_counters__reported_then_fixed(
    tenant: Tenant, client: DynamoDBClient, call_log: CallLog
) -> None:
    table_name = tenant.table.name
    dept = tenant.department()
    [tenant.employee(dept) for _ in range(3)]
    job = open_job(tenant)
    apps = [run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id)) for _ in range(3)]
    run(applications.withdraw_application(tenant.table, job.job_id, apps[0].app_id))
    corrupt(client, table_name, layout.DEPARTMENT.key_at(tenant.org_id, dept.dept_id), headcount=42)
    corrupt(
        client,
        table_name,
        layout.JOB_POSTING.key_at(tenant.org_id, job.job_id),
        appliedCount=None,
        withdrawnCount=5,
        rejectedCount=-1,
    )
    start = len(call_log.snapshot())

    found = run(counts.check_organization(tenant.table))

    assert sorted((d.entity, d.entity_id, d.field, d.stored, d.counted, d.fixed) for d in found.drifts) == sorted(
        [
            ("Department", dept.dept_id, "headcount", 42, 3, False),
            ("JobPosting", job.job_id, "applicationCounts.applied", 0, 2, False),
            ("JobPosting", job.job_id, "applicationCounts.withdrawn", 5, 1, False),
            ("JobPosting", job.job_id, "applicationCounts.rejected", -1, 0, False),
        ]
    )
    assert "UpdateItem" not in {c.operation for c in call_log.snapshot()[start:]}  # a check writes nothing

    fixed = run(counts.check_organization(tenant.table, fix=True))

    assert [(d.field, d.fixed) for d in fixed.drifts] == [(d.field, True) for d in found.drifts]
    assert stored(tenant.table, job.job_id) == recount(tenant.table, job.job_id) == ApplicationCounts(2, 0, 0, 0, 1)
    assert_headcounts_hold(tenant.table, [dept])
    assert run(counts.check_organization(tenant.table)).drifts == []
    assert "Scan" not in {c.operation for c in call_log.snapshot()[start:]}


def test_check_organization__fix_while_moves_applies_and_withdrawals_run__counters_equal_recounts(
    tenant: Tenant, client: DynamoDBClient, call_log: CallLog
) -> None:
    depts = [tenant.department(f"D{n}") for n in range(DEPARTMENTS)]
    movers = [tenant.employee(depts[n % DEPARTMENTS]) for n in range(2 * DEPARTMENTS)]
    jobs_ = [open_job(tenant, f"Job {n}") for n in range(JOBS)]
    applicants = [tenant.employee() for _ in range(30)]
    early = [run(applications.apply_to_job(tenant.table, j.job_id, a.emp_id)) for j in jobs_ for a in applicants[:4]]
    corrupted = {
        (depts[0].dept_id, "headcount"),
        (depts[1].dept_id, "headcount"),
        (jobs_[0].job_id, "applicationCounts.applied"),
        (jobs_[1].job_id, "applicationCounts.applied"),
    }
    corrupt(client, tenant.table.name, layout.DEPARTMENT.key_at(tenant.org_id, depts[0].dept_id), headcount=99)
    corrupt(client, tenant.table.name, layout.DEPARTMENT.key_at(tenant.org_id, depts[1].dept_id), headcount=-3)
    corrupt(client, tenant.table.name, layout.JOB_POSTING.key_at(tenant.org_id, jobs_[0].job_id), appliedCount=50)
    corrupt(client, tenant.table.name, layout.JOB_POSTING.key_at(tenant.org_id, jobs_[1].job_id), appliedCount=None)

    def one_write(pick: random.Random) -> object:
        kind = pick.randrange(3)
        if kind == 0:
            return run(employees.move_employee(tenant.table, pick.choice(movers).emp_id, pick.choice(depts).dept_id))
        if kind == 1:
            who, job = pick.choice(applicants[4:]), pick.choice(jobs_)
            return run(applications.apply_to_job(tenant.table, job.job_id, who.emp_id))
        app = pick.choice(early)
        return run(applications.withdraw_application(tenant.table, app.job_id, app.app_id))

    started = threading.Barrier(WRITERS + 1)
    stop = threading.Event()
    written: list[None] = []  # one entry per write done (list.append is atomic)

    def keep_writing(seed: int) -> None:
        """Writes until the repairs are over, so every repair runs beside them."""
        pick = random.Random(seed)
        started.wait()
        while not stop.is_set():
            # Applied twice, withdrawn twice: refused cleanly, nothing written.
            with contextlib.suppress(Conflict, InvalidInput, Unavailable):
                one_write(pick)
            written.append(None)

    with ThreadPoolExecutor(WRITERS) as pool:
        futures = [pool.submit(keep_writing, seed) for seed in range(WRITERS)]
        started.wait()
        try:
            repair = run(counts.check_organization(tenant.table, fix=True))
            # A repair beside the writes, after the first: it must not invent a difference.
            again = run(counts.check_organization(tenant.table, fix=True))
        finally:
            stop.set()
        for future in futures:
            future.result()

    assert {(d.entity_id, d.field) for d in repair.drifts} == corrupted
    assert all(d.fixed for d in repair.drifts)
    assert again.drifts == []
    assert written, "no write ran beside the repairs"
    assert_headcounts_hold(tenant.table, depts)
    for job in jobs_:
        assert stored(tenant.table, job.job_id) == recount(tenant.table, job.job_id)
    assert run(counts.check_organization(tenant.table)).drifts == []
    assert "Scan" not in {c.operation for c in call_log.snapshot()}


def test_drift__describe__names_org_entity_field_and_both_values() -> None:
    drift = counts.Drift("O", "Department", "D", "headcount", 4, 3, fixed=True)

    assert drift.describe() == "org O Department D headcount: stored 4, counted 3 (fixed)"


def test_check_organization__bulk_seeded_tenant__counts_written_consistent(
    tenant: Tenant, client: DynamoDBClient
) -> None:
    seeded = Bulk(tenant.org_id)
    dept = seeded.department("Seeded", headcount=3)
    staff = [seeded.employee(dept, n) for n in range(3)]
    job = seeded.job(dept, 0)
    for n, person in enumerate(staff):
        seeded.apply(job, person, n)
    run(seeded.write(tenant.table))

    report = run(counts.check_organization(tenant.table))

    assert (report.departments, report.jobs, report.drifts) == (1, 1, [])
    assert stored(tenant.table, job.job_id) == ApplicationCounts(applied=3)
