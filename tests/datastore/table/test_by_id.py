"""Items of several kinds by id in one round trip (datastore/table/by_id.py)."""

from __future__ import annotations

from datastore.aws import calls
from datastore.table import by_id
from datastore.table.by_id import Kind
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant


def test_get_by_id__organization_and_employee__one_batch_get_item(tenant: Tenant) -> None:
    with calls.listening() as log:
        organization, admin = run(
            by_id.get_by_id(tenant.table, [(Kind.ORGANIZATION, tenant.org_id), (Kind.EMPLOYEE, tenant.admin.emp_id)])
        )
    assert organization.org_id == tenant.org_id
    assert admin.emp_id == tenant.admin.emp_id
    assert log.operations() == ["BatchGetItem"]


def test_get_by_id__one_distinct_key__one_get_item(tenant: Tenant) -> None:
    with calls.listening() as log:
        found = run(by_id.get_by_id(tenant.table, [(Kind.SUBSCRIPTION, tenant.org_id)] * 2))
    assert [subscription.org_id for subscription in found] == [tenant.org_id] * 2
    assert log.operations() == ["GetItem"]


def test_get_by_id__missing_or_foreign__each_answered_alone(tenant: Tenant) -> None:
    with calls.listening() as log:
        missing, foreign, admin = run(
            by_id.get_by_id(
                tenant.table,
                [
                    (Kind.DEPARTMENT, ids.new_id()),
                    (Kind.ORGANIZATION, ids.new_id()),
                    (Kind.EMPLOYEE, tenant.admin.emp_id),
                ],
            )
        )
    assert missing is None and foreign is None
    assert admin.emp_id == tenant.admin.emp_id
    assert log.operations() == ["BatchGetItem"]
