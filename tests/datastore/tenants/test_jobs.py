from __future__ import annotations

import pytest

from datastore.aws import calls
from datastore.errors import InvalidInput, NotFound, StaleVersion
from datastore.kinds import layout
from datastore.kinds.entities import Department, JobPosting, JobStatus
from datastore.table import by_id
from datastore.table.pagination import PageRequest
from datastore.tenancy import keys
from datastore.tenants import jobs
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@pytest.fixture
def dept(tenant: Tenant) -> Department:
    return tenant.department()


def open_order(job: JobPosting) -> str:
    assert job.posted_at is not None
    return str(layout.JOB_POSTING.item(job)[keys.GSI1SK]["S"])


def test_get_job__ap9__one_get_item(tenant: Tenant, dept: Department) -> None:
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="Engineer", description="Build"))
    with calls.listening() as log:
        found = run(jobs.get_job(tenant.table, job.job_id))
    assert found == job
    assert (job.status, job.version, job.posted_at) == (JobStatus.DRAFT, 1, None)
    assert log.operations() == ["GetItem"]


def test_get_job__unknown_id__none(tenant: Tenant) -> None:
    assert run(jobs.get_job(tenant.table, ids.new_id())) is None


@pytest.mark.parametrize("descending", [True, False], ids=["newest_first", "oldest_first"])
def test_list_jobs__ap12__one_query_every_status(tenant: Tenant, dept: Department, descending: bool) -> None:
    created = [run(jobs.create_job(tenant.table, department_id=dept.dept_id, title=f"Job {n}")) for n in range(3)]
    opened = run(jobs.publish_job(tenant.table, created[1].job_id))
    closed = run(jobs.close_job(tenant.table, created[2].job_id))
    expected = [created[0], opened, closed]
    with calls.listening() as log:
        page = run(jobs.list_jobs(tenant.table, PageRequest(descending=descending)))
    assert list(page.items) == (expected[::-1] if descending else expected)
    assert log.operations() == ["Query"]
    assert "FilterExpression" not in log.calls[0].params


@pytest.mark.parametrize("descending", [True, False], ids=["newest_first", "oldest_first"])
def test_list_open_jobs__ap8__one_query_on_the_sparse_index(tenant: Tenant, dept: Department, descending: bool) -> None:
    created = [run(jobs.create_job(tenant.table, department_id=dept.dept_id, title=f"Job {n}")) for n in range(5)]
    # Published out of creation order: the index orders by posting time.
    published = [run(jobs.publish_job(tenant.table, created[n].job_id)) for n in (3, 0, 4, 1)]
    run(jobs.close_job(tenant.table, created[4].job_id))
    still_open = sorted([job for job in published if job.job_id != created[4].job_id], key=open_order)
    with calls.listening() as log:
        page = run(jobs.list_open_jobs(tenant.table, PageRequest(descending=descending)))
    assert list(page.items) == (still_open[::-1] if descending else still_open)
    assert log.operations() == ["Query"]
    assert log.calls[0].params["IndexName"] == "GSI1"
    assert log.calls[0].params["ExpressionAttributeValues"][":pk"] == {"S": f"ORG#{tenant.org_id}#OPEN"}


def test_jobs_by_id__batch_in_order_with_misses(tenant: Tenant, dept: Department) -> None:
    a = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="A"))
    with calls.listening() as log:
        assert run(by_id.get_many(tenant.table, layout.JOB_POSTING, [ids.new_id(), a.job_id, a.job_id])) == [None, a, a]
    assert log.operations() == ["BatchGetItem"]


def test_create_job__unknown_department__invalid_input_and_nothing_written(tenant: Tenant) -> None:
    with pytest.raises(InvalidInput) as raised:
        run(jobs.create_job(tenant.table, department_id=ids.new_id(), title="Ghost"))
    assert raised.value.field == "department_id"
    assert list(run(jobs.list_jobs(tenant.table, PageRequest())).items) == []


@pytest.mark.parametrize("title", [" ", "x" * 201])
def test_create_job__bad_title__invalid_input_and_no_call(tenant: Tenant, dept: Department, title: str) -> None:
    with calls.listening() as log, pytest.raises(InvalidInput) as raised:
        run(jobs.create_job(tenant.table, department_id=dept.dept_id, title=title))
    assert raised.value.field == "title"
    assert log.operations() == []


def test_publish_job__enters_the_open_index(tenant: Tenant, dept: Department) -> None:
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))
    published = run(jobs.publish_job(tenant.table, job.job_id, expected_version=1))
    assert (published.status, published.version) == (JobStatus.OPEN, 2)
    assert published.posted_at is not None
    assert list(run(jobs.list_open_jobs(tenant.table, PageRequest())).items) == [published]


def test_publish_job__not_a_draft__invalid_input(tenant: Tenant, dept: Department) -> None:
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))
    run(jobs.publish_job(tenant.table, job.job_id))
    with pytest.raises(InvalidInput, match="only a draft"):
        run(jobs.publish_job(tenant.table, job.job_id))


def test_publish_job__unknown_id__not_found(tenant: Tenant) -> None:
    with pytest.raises(NotFound):
        run(jobs.publish_job(tenant.table, ids.new_id()))


def test_close_job__leaves_the_open_index_at_once(tenant: Tenant, dept: Department) -> None:
    job = run(
        jobs.publish_job(tenant.table, run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T")).job_id)
    )
    with calls.listening() as log:
        closed = run(jobs.close_job(tenant.table, job.job_id, expected_version=2))
    assert [op for op in log.operations() if op in WRITES] == ["TransactWriteItems"]
    assert (closed.status, closed.version) == (JobStatus.CLOSED, 3)
    assert closed.closed_at is not None and closed.posted_at == job.posted_at
    assert list(run(jobs.list_open_jobs(tenant.table, PageRequest())).items) == []
    assert run(jobs.get_job(tenant.table, job.job_id)) == closed


def test_close_job__draft__closes_without_ever_opening(tenant: Tenant, dept: Department) -> None:
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))
    closed = run(jobs.close_job(tenant.table, job.job_id))
    assert closed.status is JobStatus.CLOSED
    with pytest.raises(InvalidInput, match="already closed"):
        run(jobs.close_job(tenant.table, job.job_id))


def test_update_job__fields_and_version(tenant: Tenant, dept: Department) -> None:
    other = tenant.department("Other")
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))
    updated = run(
        jobs.update_job(
            tenant.table, job.job_id, expected_version=1, title=" New ", description="D", department_id=other.dept_id
        )
    )
    assert (updated.title, updated.description, updated.department_id, updated.version) == (
        "New",
        "D",
        other.dept_id,
        2,
    )
    assert run(jobs.get_job(tenant.table, job.job_id)) == updated


def test_update_job__open_job__stays_in_the_open_index(tenant: Tenant, dept: Department) -> None:
    job = run(
        jobs.publish_job(tenant.table, run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T")).job_id)
    )
    updated = run(jobs.update_job(tenant.table, job.job_id, expected_version=2, title="Retitled"))
    assert list(run(jobs.list_open_jobs(tenant.table, PageRequest())).items) == [updated]


def test_update_job__stale_version__changes_nothing(tenant: Tenant, dept: Department) -> None:
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))
    current = run(jobs.update_job(tenant.table, job.job_id, expected_version=1, title="V2"))
    with calls.listening() as log, pytest.raises(StaleVersion) as raised:
        run(jobs.update_job(tenant.table, job.job_id, expected_version=1, title="Lost"))
    assert raised.value.current_version == 2
    assert not WRITES & set(log.operations())
    assert run(jobs.get_job(tenant.table, job.job_id, consistent=True)) == current


def test_update_job__unknown_department__invalid_input_and_nothing_changed(tenant: Tenant, dept: Department) -> None:
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))
    with pytest.raises(InvalidInput, match="department_id"):
        run(jobs.update_job(tenant.table, job.job_id, expected_version=1, title="X", department_id=ids.new_id()))
    assert run(jobs.get_job(tenant.table, job.job_id, consistent=True)) == job


def test_update_job__closed__invalid_input(tenant: Tenant, dept: Department) -> None:
    job = run(jobs.create_job(tenant.table, department_id=dept.dept_id, title="T"))
    run(jobs.close_job(tenant.table, job.job_id))
    with pytest.raises(InvalidInput, match="closed"):
        run(jobs.update_job(tenant.table, job.job_id, expected_version=2, title="X"))
