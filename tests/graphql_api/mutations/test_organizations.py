"""createOrganization (platform operators) over HTTP, and the audit log admins read."""

from __future__ import annotations

import pytest

from datastore import identities, keys
from datastore.entities import Role
from datastore.scope import SignInScope
from datastore.table import Table
from tests.conftest import Tenant
from tests.graphql_api.conftest import Api, GraphQLClient
from tests.graphql_api.mutations.documents import (
    AUDIT_LOG,
    CREATE_DEPARTMENT,
    CREATE_ORGANIZATION,
    error,
    raw_id,
)


def new_org(email: str, **overrides: str) -> dict[str, object]:
    return {
        "input": {
            "name": "Initech",
            "plan": "PRO",
            "adminEmail": email,
            "adminFirstName": "Bill",
            "adminLastName": "Lumbergh",
            **overrides,
        }
    }


def identity_of(platform: Table, email: str) -> identities.Identity | None:
    return identities.find_identity(platform.with_scope(SignInScope()), email)


def fresh_email() -> str:
    return f"boss{keys.new_id().lower()}@example.com"


def test_create_organization__its_admin_can_sign_in_and_read_it(api: Api, platform: Table) -> None:
    email = fresh_email()
    data = api.platform.data(CREATE_ORGANIZATION, new_org(email))["createOrganization"]
    assert (data["organization"]["name"], data["organization"]["plan"], data["organization"]["status"]) == (
        "Initech",
        "PRO",
        "ACTIVE",
    )
    identity = identity_of(platform, email)
    assert identity is not None and identity.emp_id == raw_id(data["adminId"])[0]
    assert identity.org_id == raw_id(data["organization"]["id"])[0]


def test_create_organization__taken_admin_email__is_conflict(api: Api, tenant: Tenant, platform: Table) -> None:
    body = api.platform.query(CREATE_ORGANIZATION, new_org(tenant.admin.email, name="Copycat"))
    assert error(body)["extensions"]["code"] == "CONFLICT"
    identity = identity_of(platform, tenant.admin.email)
    assert identity is not None and identity.org_id == tenant.org_id


@pytest.mark.parametrize(
    ("field", "value"),
    [("adminEmail", "not-an-email"), ("name", " "), ("adminFirstName", ""), ("adminLastName", "x" * 101)],
)
def test_create_organization__bad_input__names_the_field(api: Api, platform: Table, field: str, value: str) -> None:
    email = fresh_email()
    body = api.platform.query(CREATE_ORGANIZATION, new_org(email, **{field: value}))
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": f"input.{field}"}
    assert identity_of(platform, email) is None


@pytest.mark.parametrize("role", list(Role))
def test_create_organization__tenant_member__not_enough_permissions(
    api: Api, tenant: Tenant, platform: Table, role: Role
) -> None:
    caller = tenant.admin if role is Role.ADMIN else tenant.employee(role=role)
    email = fresh_email()
    assert error(api.as_(caller).query(CREATE_ORGANIZATION, new_org(email)))["extensions"]["code"] == "FORBIDDEN"
    assert identity_of(platform, email) is None


def test_create_organization__anonymous__unauthenticated(anonymous: GraphQLClient) -> None:
    body = anonymous.query(CREATE_ORGANIZATION, new_org(fresh_email()))
    assert error(body)["extensions"]["code"] == "UNAUTHENTICATED"


# --- organization.auditLog --------------------------------------------------------------


def test_audit_log__newest_first_with_actor_and_changes(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    for name in ("First", "Second", "Third"):
        admin.data(CREATE_DEPARTMENT, {"input": {"name": name}})
    log = admin.data(AUDIT_LOG, {"first": 2})["organization"]["auditLog"]
    nodes = [edge["node"] for edge in log["edges"]]
    assert [n["action"] for n in nodes] == ["department.create", "department.create"]
    assert [next(c["after"] for c in n["changes"] if c["field"] == "name") for n in nodes] == ["Third", "Second"]
    assert nodes[0]["actor"] is not None and raw_id(nodes[0]["actor"]["id"]) == (tenant.admin.emp_id,)
    assert log["pageInfo"]["hasNextPage"] is True
    rest = admin.data(AUDIT_LOG, {"first": 10, "after": log["pageInfo"]["endCursor"]})["organization"]["auditLog"]
    assert [e["node"]["action"] for e in rest["edges"]] == ["department.create", "organization.create"]


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_audit_log__not_enough_permissions(api: Api, tenant: Tenant, role: Role) -> None:
    body = api.as_(tenant.employee(role=role)).query(AUDIT_LOG, {"first": 5})
    assert [e["extensions"]["code"] for e in body["errors"]] == ["FORBIDDEN"]
