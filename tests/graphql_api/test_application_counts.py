"""JobPosting.applicationCounts over HTTP: who may read it, and exact counts after parallel writes."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from datastore.kinds import layout
from datastore.kinds.entities import ApplicationCounts
from datastore.tenants import applications
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.tenants.test_application_counts import recount, stored
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.schema.mutations.documents import APPLY, SET_STATUS, WITHDRAW, codes, gid, manager_of, open_job

COUNTS = """
query($id: ID!) {
  jobPosting(id: $id) {
    title
    applicationCounts { applied reviewing rejected accepted withdrawn total }
  }
}"""

ZEROS = {"applied": 0, "reviewing": 0, "rejected": 0, "accepted": 0, "withdrawn": 0, "total": 0}


def counts_of(client: GraphQLClient, job_id: str) -> dict[str, Any]:
    counts: dict[str, Any] = client.data(COUNTS, {"id": job_id})["jobPosting"]["applicationCounts"]
    return counts


def test_application_counts__admin__reads_them(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    run(applications.apply_to_job(tenant.table, job.job_id, tenant.employee().emp_id))

    assert counts_of(api.admin_of(tenant), gid(job)) == {**ZEROS, "applied": 1, "total": 1}


def test_application_counts__manager_of_the_department__reads_them(api: Api, tenant: Tenant) -> None:
    dept = tenant.department()
    job = open_job(tenant, dept)

    assert counts_of(api.as_(manager_of(tenant, dept)), gid(job)) == ZEROS


@pytest.mark.parametrize("who", ["employee", "manager of another department"])
def test_application_counts__not_a_reader_of_the_applications__forbidden_field_only(
    api: Api, tenant: Tenant, who: str
) -> None:
    job = open_job(tenant, tenant.department())
    caller = tenant.employee() if who == "employee" else manager_of(tenant, tenant.department("Elsewhere"))

    body = api.as_(caller).query(COUNTS, {"id": gid(job)})

    assert codes(body) == ["FORBIDDEN"]
    assert body["data"]["jobPosting"] == {"title": "Engineer", "applicationCounts": None}


def test_application_counts__job_written_before_counters__reads_zeros(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    item = run(tenant.table.get(layout.JOB_POSTING.key_at(tenant.org_id, job.job_id), consistent=True))
    assert item is not None and not {"appliedCount", "withdrawnCount"} & set(item)  # as an old job's item

    assert counts_of(api.admin_of(tenant), gid(job)) == ZEROS
    assert layout.JOB_POSTING.read(item).application_counts == ApplicationCounts()


def test_application_counts__parallel_applies_withdrawals_and_decisions__equal_a_recount(
    api: Api, tenant: Tenant
) -> None:
    job = open_job(tenant, tenant.department())
    people = [tenant.employee() for _ in range(20)]
    admin = api.admin_of(tenant)

    def apply(person: Any) -> dict[str, Any]:
        return api.as_(person).query(APPLY, {"input": {"jobPostingId": gid(job)}})

    with ThreadPoolExecutor(20) as pool:
        applied = list(pool.map(apply, people))
    assert [codes(body) for body in applied] == [[]] * 20
    app_ids = [body["data"]["applyToJob"]["application"]["id"] for body in applied]

    def later(index: int) -> dict[str, Any]:
        if index % 3 == 0:
            return api.as_(people[index]).query(WITHDRAW, {"input": {"id": app_ids[index]}})
        status = "REVIEWING" if index % 3 == 1 else "REJECTED"
        return admin.query(SET_STATUS, {"input": {"id": app_ids[index], "status": status}})

    with ThreadPoolExecutor(20) as pool:
        moved = list(pool.map(later, range(20)))
    assert Counter(tuple(codes(body)) for body in moved) == {(): 20}

    expected = {"applied": 0, "reviewing": 7, "rejected": 6, "accepted": 0, "withdrawn": 7, "total": 20}
    assert counts_of(admin, gid(job)) == expected
    assert stored(tenant.table, job.job_id) == recount(tenant.table, job.job_id)
