"""Demo data (datastore/dev/demo.py), loaded into a table of its own so its fixed emails stay apart."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

import pytest

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo
from datastore.dev import demo
from datastore.errors import InvalidInput
from datastore.kinds.entities import JobStatus, Role
from datastore.signin import identities
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope, SignInScope, TenantScope
from datastore.tenants import applications, departments, employees, jobs, organizations
from datastore.upkeep import counts
from datastore.values import ids
from tests.blocking import run
from tests.conftest import TEST_RETRY, provisioned
from tests.datastore.support import all_pages, assert_headcounts_hold, drop_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@pytest.fixture(scope="module")
def demo_table(client: DynamoDBClient, dynamo: AsyncDynamo) -> Iterator[Table]:
    name = f"hr-demo-{ids.new_id().lower()}"
    provisioned(client, dynamo, name)
    table = Table(dynamo, name, PlatformScope(), retry=TEST_RETRY)
    assert run(demo.load(table)) is True
    yield table
    drop_table(client, name)


def tenant_of(table: Table, email: str) -> Table:
    identity = run(identities.find_identity(table.with_scope(SignInScope()), email))
    assert identity is not None
    return table.with_scope(TenantScope(identity.org_id, identity.emp_id))


def test_load__second_time__writes_nothing(demo_table: Table) -> None:
    with calls.listening() as log:
        assert run(demo.load(demo_table)) is False
    assert not WRITES & set(log.operations())


def test_demo__two_organisations_by_name(demo_table: Table) -> None:
    names = [org.name for org in run(organizations.list_organizations(demo_table, PageRequest())).items]
    assert names == ["Acme Corp", "Globex Inc"]


def test_demo__acme_people_departments_and_headcounts(demo_table: Table) -> None:
    acme = tenant_of(demo_table, demo.ACME_ADMIN)
    alice = run(employees.get_employee(acme, acme.tenant.actor_id or ""))
    assert alice is not None and alice.role is Role.ADMIN
    bob_id = run(employees.find_employee_id_by_email(acme, demo.ACME_MANAGER))
    bob = run(employees.get_employee(acme, bob_id or ""))
    assert bob is not None and bob.role is Role.MANAGER
    depts = list(run(departments.list_departments(acme, PageRequest())).items)
    assert sorted(d.name for d in depts) == ["Engineering", "Finance", "People Ops", "Sales"]
    assert all(d.manager_id is not None for d in depts)
    assert sum(d.headcount for d in depts) == 1 + len(demo.ACME_PEOPLE)
    assert_headcounts_hold(acme, depts)


def test_demo__acme_jobs_and_applications(demo_table: Table) -> None:
    acme = tenant_of(demo_table, demo.ACME_ADMIN)
    statuses = sorted(job.status for job in run(jobs.list_jobs(acme, PageRequest())).items)
    assert statuses == sorted([JobStatus.OPEN] * 3 + [JobStatus.CLOSED, JobStatus.DRAFT])
    open_jobs = list(run(jobs.list_open_jobs(acme, PageRequest())).items)
    assert len(open_jobs) == 3
    total = sum(
        len(all_pages(partial(applications.list_job_applications, acme, job.job_id)))
        for job in run(jobs.list_jobs(acme, PageRequest())).items
    )
    assert total == 8
    assert sum(job.application_counts.total for job in run(jobs.list_jobs(acme, PageRequest())).items) == 8


@pytest.mark.parametrize("admin", [demo.ACME_ADMIN, demo.GLOBEX_ADMIN])
def test_demo__every_counter__equals_its_recount(demo_table: Table, admin: str) -> None:
    report = run(counts.check_organization(tenant_of(demo_table, admin)))

    assert report.jobs > 0 and report.drifts == []


def test_demo__globex_is_isolated_from_acme(demo_table: Table) -> None:
    acme = tenant_of(demo_table, demo.ACME_ADMIN)
    globex = tenant_of(demo_table, demo.GLOBEX_ADMIN)
    assert acme.tenant.org_id != globex.tenant.org_id
    alice_id = acme.tenant.actor_id or ""
    assert run(employees.get_employee(globex, alice_id)) is None
    assert run(employees.find_employee_id_by_email(globex, demo.ACME_ADMIN)) is None
    globex_people = all_pages(partial(employees.list_employees, globex))
    assert len(globex_people) == 1 + len(demo.GLOBEX_PEOPLE)
    assert_headcounts_hold(globex, list(run(departments.list_departments(globex, PageRequest())).items))


def test_demo__each_organisation_owns_its_domain(demo_table: Table) -> None:
    acme = tenant_of(demo_table, demo.ACME_ADMIN)
    globex = tenant_of(demo_table, demo.GLOBEX_ADMIN)
    acme_org, globex_org = run(organizations.get_organization(acme)), run(organizations.get_organization(globex))
    assert acme_org is not None and acme_org.email_domains == ("acme.co",)
    assert globex_org is not None and globex_org.email_domains == ("globex.example",)
    with pytest.raises(InvalidInput) as raised:
        run(
            employees.create_employee(
                acme,
                email="mallory@globex.example",
                first_name="M",
                last_name="S",
                department_id=None,
                role=Role.EMPLOYEE,
            )
        )
    assert raised.value.field == "email"
