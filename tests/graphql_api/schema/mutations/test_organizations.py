"""createOrganization and addEmailDomain (platform operators) over HTTP, and the audit log admins read."""

from __future__ import annotations

import pytest

from datastore.kinds.entities import Employee, Role
from datastore.signin import api_keys, identities
from datastore.table.scoped import Table
from datastore.tenancy.scope import SignInScope, TenantScope
from datastore.tenants import employees, organizations
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory, unique_domain
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.schema.mutations.documents import (
    ADD_EMAIL_DOMAIN,
    AUDIT_LOG,
    CREATE_DEPARTMENT,
    CREATE_EMPLOYEE,
    CREATE_ORGANIZATION,
    UNKNOWN_ULID,
    error,
    raw_id,
)


def new_org(email: str, **overrides: object) -> dict[str, object]:
    return {
        "input": {
            "name": "Initech",
            "plan": "PRO",
            "emailDomains": [email.rpartition("@")[2]],
            "adminEmail": email,
            "adminFirstName": "Bill",
            "adminLastName": "Lumbergh",
            **overrides,
        }
    }


CREATE_ORGANIZATION_WITH_DOMAINS = """
mutation($input: CreateOrganizationInput!) {
  createOrganization(input: $input) { organization { id emailDomains } adminId }
}"""

ORG_DOMAINS = "{ organization { emailDomains } }"


def employee_of(platform: Table, identity: identities.Identity) -> Employee:
    found = run(employees.get_employee(platform.with_scope(TenantScope(identity.org_id)), identity.emp_id))
    assert found is not None
    return found


def identity_of(platform: Table, email: str) -> identities.Identity | None:
    return run(identities.find_identity(platform.with_scope(SignInScope()), email))


def fresh_email() -> str:
    return f"boss@{unique_domain()}"


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


def test_create_organization__domain_of_another_org__is_conflict_for_the_operator(
    api: Api, tenant: Tenant, platform: Table
) -> None:
    body = api.platform.query(CREATE_ORGANIZATION, new_org(tenant.admin.email, name="Copycat"))
    assert error(body)["extensions"]["code"] == "CONFLICT"
    identity = identity_of(platform, tenant.admin.email)
    assert identity is not None and identity.org_id == tenant.org_id


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("adminEmail", "not-an-email"),
        ("adminEmail", "boss@outside.example"),
        ("name", " "),
        ("name", "Init\u202eech"),
        ("name", "x" * 101),
        ("adminFirstName", ""),
        ("adminLastName", "x" * 101),
        ("emailDomains", []),
        ("emailDomains", ["no spaces.example"]),
        ("emailDomains", ["x" * 250 + ".com"]),
    ],
)
def test_create_organization__bad_input__names_the_field(api: Api, platform: Table, field: str, value: object) -> None:
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


def test_create_organization__email_domains_are_the_operators_and_the_admins_to_read(api: Api, platform: Table) -> None:
    email = fresh_email()
    domain = email.rpartition("@")[2]
    variables = new_org(email)
    variables["input"]["emailDomains"] = [domain.upper(), f"second.{domain}", domain]  # type: ignore[index]
    data = api.platform.data(CREATE_ORGANIZATION_WITH_DOMAINS, variables)["createOrganization"]
    assert data["organization"]["emailDomains"] == sorted([domain, f"second.{domain}"])
    identity = identity_of(platform, email)
    assert identity is not None
    admin = api.as_(employee_of(platform, identity))
    assert admin.data(ORG_DOMAINS)["organization"]["emailDomains"] == sorted([domain, f"second.{domain}"])


# --- addEmailDomain ---------------------------------------------------------------------


def test_add_email_domain__admins_may_then_hire_there(api: Api, tenant: Tenant) -> None:
    extra = unique_domain()
    org_id = ids.encode("Organization", tenant.org_id)
    admin = api.admin_of(tenant)
    hire = {"input": {"email": f"new@{extra}", "firstName": "N", "lastName": "H"}}
    before = admin.query(CREATE_EMPLOYEE, hire)
    assert error(before)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.email"}
    data = api.platform.data(ADD_EMAIL_DOMAIN, {"input": {"orgId": org_id, "domain": extra.upper()}})
    assert data["addEmailDomain"]["organization"] == {"id": org_id, "emailDomains": sorted([tenant.domain, extra])}
    assert admin.data(CREATE_EMPLOYEE, hire)["createEmployee"]["employee"]["email"] == f"new@{extra}"
    # Adding it again changes nothing.
    again = api.platform.data(ADD_EMAIL_DOMAIN, {"input": {"orgId": org_id, "domain": extra}})
    assert again["addEmailDomain"]["organization"]["emailDomains"] == sorted([tenant.domain, extra])
    actions = [e["node"]["action"] for e in admin.data(AUDIT_LOG, {"first": 5})["organization"]["auditLog"]["edges"]]
    assert actions.count("organization.addEmailDomain") == 1


def test_add_email_domain__held_by_another_org__conflict_and_nothing_changes(
    api: Api, tenant: Tenant, make_tenant: TenantFactory
) -> None:
    other = make_tenant()
    body = api.platform.query(
        ADD_EMAIL_DOMAIN, {"input": {"orgId": ids.encode("Organization", tenant.org_id), "domain": other.domain}}
    )
    assert error(body)["extensions"]["code"] == "CONFLICT"
    assert api.admin_of(tenant).data(ORG_DOMAINS)["organization"]["emailDomains"] == [tenant.domain]


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("domain", "not a domain", "BAD_USER_INPUT"),
        ("domain", "x@y.example", "BAD_USER_INPUT"),
        ("domain", "evil\u202e.example", "BAD_USER_INPUT"),
        ("orgId", "not-an-id", "BAD_USER_INPUT"),
        ("orgId", ids.encode("Organization", UNKNOWN_ULID), "NOT_FOUND"),
        ("orgId", ids.encode("Organization", UNKNOWN_ULID.lower()), "BAD_USER_INPUT"),
        ("orgId", ids.encode("Department", UNKNOWN_ULID), "NOT_FOUND"),
    ],
)
def test_add_email_domain__bad_input(api: Api, tenant: Tenant, field: str, value: str, code: str) -> None:
    variables = {"orgId": ids.encode("Organization", tenant.org_id), "domain": unique_domain(), field: value}
    body = api.platform.query(ADD_EMAIL_DOMAIN, {"input": variables})
    assert error(body)["extensions"]["code"] == code
    if code == "BAD_USER_INPUT":
        assert error(body)["extensions"]["field"] == f"input.{field}"
    assert api.admin_of(tenant).data(ORG_DOMAINS)["organization"]["emailDomains"] == [tenant.domain]


@pytest.mark.parametrize("role", list(Role))
def test_add_email_domain__tenant_member__forbidden(api: Api, tenant: Tenant, role: Role) -> None:
    caller = tenant.admin if role is Role.ADMIN else tenant.employee(role=role)
    body = api.as_(caller).query(
        ADD_EMAIL_DOMAIN, {"input": {"orgId": ids.encode("Organization", tenant.org_id), "domain": unique_domain()}}
    )
    assert error(body)["extensions"]["code"] == "FORBIDDEN"


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_email_domains__not_enough_permissions(api: Api, tenant: Tenant, role: Role) -> None:
    body = api.as_(tenant.employee(role=role)).query(ORG_DOMAINS)
    assert [e["extensions"]["code"] for e in body["errors"]] == ["FORBIDDEN"]


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


def test_audit_log__denied__only_this_field_is_null(api: Api, tenant: Tenant) -> None:
    body = api.as_(tenant.employee(role=Role.EMPLOYEE)).query(
        "{ organization { name auditLog(first: 5) { edges { node { action } } } } }"
    )
    assert [(e["extensions"]["code"], e["path"]) for e in body["errors"]] == [
        ("FORBIDDEN", ["organization", "auditLog"])
    ]
    assert body["data"] == {"organization": {"name": tenant.organization.name, "auditLog": None}}


CLOSE_ORGANIZATION = """
mutation($input: CloseOrganizationInput!) {
  closeOrganization(input: $input) { organization { id status } deleteAfter }
}"""
ME = "{ organization { name } }"


def _close(client: GraphQLClient, org_id: str) -> dict[str, object]:
    return client.query(CLOSE_ORGANIZATION, {"input": {"orgId": ids.encode("Organization", org_id)}})


def test_close_organization__closing__its_tokens_and_keys_stop_at_once(api: Api, tenant: Tenant) -> None:
    _key, secret = run(api_keys.create_api_key(tenant.table, name="sync", role=Role.ADMIN))
    admin = api.admin_of(tenant)
    assert "errors" not in admin.query(ME)

    body = _close(api.platform, tenant.org_id)

    closed = body["data"]["closeOrganization"]  # type: ignore[index]
    assert closed["organization"]["status"] == "CLOSING"
    assert closed["deleteAfter"] > "2000"
    assert error(admin.query(ME))["extensions"]["code"] == "UNAUTHENTICATED"
    assert error(GraphQLClient(api.http, secret).query(ME))["extensions"]["code"] == "UNAUTHENTICATED"
    found = run(organizations.get_organization(tenant.table))
    assert found is not None and found.status.value == "closing"


def test_close_organization__a_tenant_admin__forbidden(api: Api, tenant: Tenant) -> None:
    assert error(_close(api.admin_of(tenant), tenant.org_id))["extensions"]["code"] == "FORBIDDEN"


def test_close_organization__unknown__not_found(api: Api) -> None:
    assert error(_close(api.platform, UNKNOWN_ULID))["extensions"]["code"] == "NOT_FOUND"
