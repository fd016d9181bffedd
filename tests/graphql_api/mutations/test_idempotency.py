"""Idempotent retries over HTTP: one write per key; another input under the key is refused."""

from __future__ import annotations

from datastore import applications, calls, departments
from datastore.pagination import PageRequest
from tests.conftest import Tenant
from tests.graphql_api.conftest import Api
from tests.graphql_api.mutations.documents import (
    APPLY,
    CREATE_DEPARTMENT,
    MOVE_EMPLOYEE,
    audit_actions,
    error,
    gid,
    open_job,
)


def test_retry_with_same_key__writes_once_and_returns_the_first_result(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    variables = {"input": {"name": "Research", "idempotencyKey": "create-research-1"}}
    with calls.listening() as log:
        first = admin.data(CREATE_DEPARTMENT, variables)
        again = [admin.data(CREATE_DEPARTMENT, variables) for _ in range(3)]
    assert all(result == first for result in again)
    assert log.count("TransactWriteItems") == 1
    listed = departments.list_departments(tenant.table, PageRequest(first=10)).items
    assert [d.name for d in listed] == ["Research"]
    assert audit_actions(tenant).count("department.create") == 1


def test_retry_of_apply_with_same_key__one_application(api: Api, tenant: Tenant) -> None:
    job = open_job(tenant, tenant.department())
    me = api.as_(tenant.employee())
    variables = {"input": {"jobPostingId": gid(job), "idempotencyKey": "apply-1"}}
    with calls.listening() as log:
        first = me.data(APPLY, variables)
        assert me.data(APPLY, variables) == first
    assert log.count("TransactWriteItems") == 1
    assert len(applications.list_job_applications(tenant.table, job.job_id, PageRequest(first=10)).items) == 1


def test_same_key_with_different_input__is_refused(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    admin.data(CREATE_DEPARTMENT, {"input": {"name": "Research", "idempotencyKey": "k-1"}})
    with calls.listening() as log:
        body = admin.query(CREATE_DEPARTMENT, {"input": {"name": "Sales", "idempotencyKey": "k-1"}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.idempotencyKey"}
    assert log.count("TransactWriteItems") == 0
    assert [d.name for d in departments.list_departments(tenant.table, PageRequest(first=10)).items] == ["Research"]


def test_same_key_for_another_mutation__is_refused(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    person = tenant.employee(eng)
    admin.data(CREATE_DEPARTMENT, {"input": {"name": "Research", "idempotencyKey": "k-2"}})
    body = admin.query(MOVE_EMPLOYEE, {"input": {"id": gid(person), "departmentId": gid(ops), "idempotencyKey": "k-2"}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.idempotencyKey"}


def test_malformed_key__is_bad_user_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(CREATE_DEPARTMENT, {"input": {"name": "R", "idempotencyKey": "has space"}})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.idempotencyKey"}
    assert departments.list_departments(tenant.table, PageRequest(first=10)).items == []
