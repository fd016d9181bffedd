from __future__ import annotations

import pytest

from datastore.aws import calls
from datastore.errors import InvalidInput, ScopeViolation
from datastore.kinds.entities import Identity
from datastore.signin import identities
from datastore.table.scoped import Table
from datastore.tenancy.scope import SignInScope
from datastore.tenants import employees
from datastore.values import ids
from tests.blocking import run
from tests.conftest import Tenant


@pytest.fixture
def sign_in(platform: Table) -> Table:
    return platform.with_scope(SignInScope())


def test_find_identity__ap4_sign_in__one_get_item_any_case(tenant: Tenant, sign_in: Table) -> None:
    with calls.listening() as log:
        found = run(identities.find_identity(sign_in, tenant.admin.email.upper()))
    assert found == Identity(tenant.admin.email, tenant.org_id, tenant.admin.emp_id)
    assert log.operations() == ["GetItem"]
    assert log.calls[0].params["Key"]["PK"] == {"S": f"EMAIL#{tenant.admin.email}"}


def test_find_identity__unknown_email__none(sign_in: Table) -> None:
    assert run(identities.find_identity(sign_in, f"nobody{ids.new_id().lower()}@example.com")) is None


def test_find_identity__wrong_shape__invalid_input_and_no_call(sign_in: Table) -> None:
    with calls.listening() as log, pytest.raises(InvalidInput):
        run(identities.find_identity(sign_in, "alice-at-acme"))
    assert log.operations() == []


def test_find_identity__tenant_scope__scope_violation_and_no_call(tenant: Tenant) -> None:
    with calls.listening() as log, pytest.raises(ScopeViolation):
        run(identities.find_identity(tenant.table, tenant.admin.email))
    assert log.operations() == []


def test_find_identity__follows_an_email_change(tenant: Tenant, sign_in: Table) -> None:
    emp = tenant.employee()
    new_email = tenant.email(f"renamed{ids.new_id().lower()}")
    run(employees.update_employee(tenant.table, emp.emp_id, expected_version=emp.version, email=new_email))
    assert run(identities.find_identity(sign_in, emp.email)) is None
    assert run(identities.find_identity(sign_in, new_email)) == Identity(new_email, tenant.org_id, emp.emp_id)


def test_organization_and_employee__read_together__one_batch_get(tenant: Tenant) -> None:
    with calls.listening() as log:
        organization, employee = run(identities.organization_and_employee(tenant.table, tenant.admin.emp_id))
    assert organization == tenant.organization
    assert employee == tenant.admin
    assert log.operations() == ["BatchGetItem"]


def test_organization_and_employee__unknown_employee__none(tenant: Tenant) -> None:
    organization, employee = run(identities.organization_and_employee(tenant.table, ids.new_id()))
    assert (organization, employee) == (tenant.organization, None)


def test_organization_and_employee__sign_in_scope__scope_violation(tenant: Tenant, sign_in: Table) -> None:
    with pytest.raises(ScopeViolation):
        run(identities.organization_and_employee(sign_in, tenant.admin.emp_id))
