from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from datastore.aws import calls
from datastore.errors import Conflict, InvalidInput, NotFound, ScopeViolation
from datastore.kinds import layout
from datastore.kinds.entities import EmailDomain, Organization, OrganizationStatus, Plan, Role
from datastore.signin import identities
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.tenancy.scope import SignInScope, TenantScope
from datastore.tenants import employees, organizations
from datastore.values import ids, validation
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory, unique_domain
from tests.datastore.support import raw_get, write_items
from tests.legacy_layout import LegacyOrganization

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def test_get_organization__ap1__one_get_item(tenant: Tenant) -> None:
    with calls.listening() as log:
        org = run(organizations.get_organization(tenant.table))
    assert org == tenant.organization
    assert org is not None and org.status is OrganizationStatus.ACTIVE
    assert log.operations() == ["GetItem"]


def test_get_organization__unknown_org__none(platform: Table) -> None:
    assert run(organizations.get_organization(platform.with_scope(TenantScope(ids.new_id())))) is None


def test_get_organization_with_subscription__ap13__one_query_on_the_org_partition(tenant: Tenant) -> None:
    tenant.department()  # Other items in the partition must not be read.
    with calls.listening() as log:
        found = run(organizations.get_organization_with_subscription(tenant.table))
    assert found is not None
    assert found.organization == tenant.organization
    assert found.subscription is not None
    assert (found.subscription.org_id, found.subscription.plan, found.subscription.seats) == (
        tenant.org_id,
        Plan.PRO,
        organizations.SEATS_BY_PLAN[Plan.PRO],
    )
    assert log.operations() == ["Query"]
    (query,) = log.calls
    assert query.params["ExpressionAttributeValues"][":pk"] == {"S": f"ORG#{tenant.org_id}"}
    assert query.params["ExpressionAttributeValues"][":prefix"] == {"S": "#"}
    assert "FilterExpression" not in query.params
    assert query.items == 2


def test_get_organization_with_subscription__unknown_org__none(platform: Table) -> None:
    assert run(organizations.get_organization_with_subscription(platform.with_scope(TenantScope(ids.new_id())))) is None


def walk_organizations(platform: Table, descending: bool) -> list[str]:
    ids: list[str] = []
    after = None
    while True:
        page = run(
            organizations.list_organizations(platform, PageRequest(first=100, after=after, descending=descending))
        )
        ids.extend(org.org_id for org in page.items)
        if not page.has_next:
            return ids
        after = page.end_cursor


def test_list_organizations__ap14__one_query_on_gsi1_in_name_order(platform: Table, make_tenant: TenantFactory) -> None:
    unique = ids.new_id()
    made = [make_tenant(f"AP14 {unique} {letter}") for letter in "CAB"]
    by_name = [t.org_id for t in sorted(made, key=lambda t: t.organization.name)]
    with calls.listening() as log:
        page = run(organizations.list_organizations(platform, PageRequest(first=5)))
    assert log.operations() == ["Query"]
    assert log.calls[0].params["IndexName"] == "GSI1"
    assert log.calls[0].params["ExpressionAttributeValues"][":pk"] == {"S": "ORGS"}
    names = [org.name for org in page.items]
    assert names == sorted(names)
    for descending in (False, True):
        listed = [org_id for org_id in walk_organizations(platform, descending) if org_id in by_name]
        assert listed == (by_name[::-1] if descending else by_name)


def test_list_organizations__tenant_scope__scope_violation_without_a_call(tenant: Tenant) -> None:
    with calls.listening() as log, pytest.raises(ScopeViolation):
        run(organizations.list_organizations(tenant.table, PageRequest()))
    assert log.operations() == []


def test_create_organization__writes_org_subscription_and_admin_in_one_transaction(platform: Table) -> None:
    unique = ids.new_id().lower()
    with calls.listening() as log:
        org, admin = run(
            organizations.create_organization(
                platform,
                name="  New Org  ",
                plan=Plan.FREE,
                email_domains=[f"{unique}.Example.com", f"second.{unique}.example.com"],
                admin_email=f"Boss{unique}@{unique}.Example.com",
                admin_first_name="Bo",
                admin_last_name="Ss",
            )
        )
    assert log.operations() == ["TransactWriteItems"]
    assert org.name == "New Org"
    assert admin.role is Role.ADMIN and admin.email == f"boss{unique}@{unique}.example.com"
    assert org.email_domains == (f"{unique}.example.com", f"second.{unique}.example.com")
    tenant = platform.with_scope(TenantScope(org.org_id))
    found = run(organizations.get_organization_with_subscription(tenant))
    assert found is not None and found.organization == org
    assert found.subscription is not None and found.subscription.seats == organizations.SEATS_BY_PLAN[Plan.FREE]
    assert run(employees.get_employee(tenant, admin.emp_id)) == admin
    identity = run(identities.find_identity(platform.with_scope(SignInScope()), admin.email))
    assert identity is not None and (identity.org_id, identity.emp_id) == (org.org_id, admin.emp_id)


def test_create_organization__domain_of_another_org__conflict_and_nothing_written(
    platform: Table, tenant: Tenant, client: DynamoDBClient, table_name: str
) -> None:
    name = f"Clash {ids.new_id()}"
    fresh = unique_domain()
    with pytest.raises(Conflict, match=f"domain {tenant.domain} belongs to another organisation"):
        run(
            organizations.create_organization(
                platform,
                name=name,
                plan=Plan.PRO,
                email_domains=[fresh, tenant.domain],
                admin_email=tenant.email("copycat"),
                admin_first_name="A",
                admin_last_name="B",
            )
        )
    assert name not in [org.name for org in _all_organizations(platform)]
    assert raw_get(client, table_name, layout.EMAIL_DOMAIN.key_at(fresh)) is None
    assert run(identities.find_identity(platform.with_scope(SignInScope()), tenant.email("copycat"))) is None


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("email", {"admin_email": "not-an-email"}),
        ("email", {"admin_email": "outsider@elsewhere.example"}),
        ("name", {"name": "   "}),
        ("name", {"name": "Evil\u202eCorp"}),
        ("first_name", {"admin_first_name": ""}),
        ("email_domains", {"email_domains": []}),
        ("email_domains", {"email_domains": ["not a domain"]}),
        ("email_domains", {"email_domains": ["someone@fine.example"]}),
    ],
)
def test_create_organization__bad_input__invalid_input_and_no_call(
    platform: Table, field: str, values: dict[str, str]
) -> None:
    domain = unique_domain()
    arguments: dict[str, object] = {
        "name": "Fine",
        "email_domains": [domain],
        "admin_email": f"ok@{domain}",
        "admin_first_name": "A",
        "admin_last_name": "B",
    } | values
    with calls.listening() as log, pytest.raises(InvalidInput) as raised:
        run(organizations.create_organization(platform, plan=Plan.PRO, **arguments))
    assert raised.value.field == field
    assert log.operations() == []


def _all_organizations(platform: Table) -> list[Organization]:
    found: list[Organization] = []
    after = None
    while True:
        page = run(organizations.list_organizations(platform, PageRequest(first=100, after=after)))
        found.extend(page.items)
        if not page.has_next:
            return found
        after = page.end_cursor


# --- email domains ---------------------------------------------------------------------------


def test_create_organization__writes_one_marker_per_domain(
    platform: Table, client: DynamoDBClient, table_name: str
) -> None:
    first, second = unique_domain(), unique_domain()
    org, _ = run(
        organizations.create_organization(
            platform,
            name="Two Domains",
            plan=Plan.PRO,
            email_domains=[second, first.upper(), first],
            admin_email=f"boss@{second}",
            admin_first_name="A",
            admin_last_name="B",
        )
    )
    assert org.email_domains == tuple(sorted([first, second]))
    for domain in (first, second):
        marker = raw_get(client, table_name, layout.EMAIL_DOMAIN.key_at(domain))
        assert marker is not None and marker["orgId"] == {"S": org.org_id}
    assert run(organizations.get_organization(platform.with_scope(TenantScope(org.org_id)))) == org


def test_add_email_domain__marker_and_list_in_one_transaction__then_employees_may_use_it(
    platform: Table, tenant: Tenant, client: DynamoDBClient, table_name: str
) -> None:
    extra = unique_domain()
    with calls.listening() as log:
        updated = run(organizations.add_email_domain(platform, tenant.org_id, extra.upper()))
    assert log.operations() == ["GetItem", "TransactWriteItems"]
    assert updated.email_domains == tuple(sorted([tenant.domain, extra]))
    assert run(organizations.get_organization(tenant.table)) == updated
    marker = raw_get(client, table_name, layout.EMAIL_DOMAIN.key_at(extra))
    assert marker is not None and marker["orgId"] == {"S": tenant.org_id}
    assert tenant.employee(email=f"someone@{extra}").email == f"someone@{extra}"


def test_add_email_domain__owned_already__changes_nothing(platform: Table, tenant: Tenant) -> None:
    with calls.listening() as log:
        assert run(organizations.add_email_domain(platform, tenant.org_id, tenant.domain)) == tenant.organization
    assert log.operations() == ["GetItem"]


def test_add_email_domain__held_by_another__conflict_and_nothing_changes(
    platform: Table, tenant: Tenant, make_tenant: TenantFactory, client: DynamoDBClient, table_name: str
) -> None:
    other = make_tenant()
    with pytest.raises(Conflict, match="belongs to another organisation"):
        run(organizations.add_email_domain(platform, tenant.org_id, other.domain))
    assert run(organizations.get_organization(tenant.table)) == tenant.organization
    marker = raw_get(client, table_name, layout.EMAIL_DOMAIN.key_at(other.domain))
    assert marker is not None and marker["orgId"] == {"S": other.org_id}


def test_add_email_domain__unknown_org__not_found(platform: Table) -> None:
    with pytest.raises(NotFound):
        run(organizations.add_email_domain(platform, ids.new_id(), unique_domain()))


@pytest.mark.parametrize("domain", ["not a domain", "a@b.example"])
def test_add_email_domain__bad_domain__invalid_input_and_no_call(platform: Table, tenant: Tenant, domain: str) -> None:
    with calls.listening() as log, pytest.raises(InvalidInput) as raised:
        run(organizations.add_email_domain(platform, tenant.org_id, domain))
    assert raised.value.field == "domain"
    assert log.operations() == []


def test_add_email_domain__past_the_limit__invalid_input(platform: Table, tenant: Tenant) -> None:
    for _ in range(validation.EMAIL_DOMAINS_MAX - 1):
        run(organizations.add_email_domain(platform, tenant.org_id, unique_domain()))
    with pytest.raises(InvalidInput, match=f"at most {validation.EMAIL_DOMAINS_MAX}"):
        run(organizations.add_email_domain(platform, tenant.org_id, unique_domain()))


def test_provisioning__tenant_scope__scope_violation_and_no_call(tenant: Tenant) -> None:
    domain = unique_domain()
    with calls.listening() as log:
        with pytest.raises(ScopeViolation):
            run(organizations.add_email_domain(tenant.table, tenant.org_id, domain))
        with pytest.raises(ScopeViolation):
            run(
                organizations.create_organization(
                    tenant.table,
                    name="Sneaky",
                    plan=Plan.FREE,
                    email_domains=[domain],
                    admin_email=f"a@{domain}",
                    admin_first_name="A",
                    admin_last_name="B",
                )
            )
    assert log.operations() == []


# --- adopt_email_domains: organisations written before they owned domains (server.py migrate) ---


def domainless(client: DynamoDBClient, platform: Table, *domains: str) -> LegacyOrganization:
    """An organisation as the previous release wrote it (no domains), with one employee per domain."""
    org = LegacyOrganization(f"Old {ids.new_id()[-6:]}")
    for index, domain in enumerate(domains):
        org.employee(f"e{index}@{domain}", "E", f"Person {index}", role="admin" if index == 0 else "employee")
    return org.write(client, platform.name)


def test_adopt_email_domains__free_domains__markers_and_list_in_one_transaction(
    platform: Table, client: DynamoDBClient, table_name: str
) -> None:
    first, second = unique_domain(), unique_domain()
    org = domainless(client, platform, first, second)

    with calls.listening() as log:
        adopted = run(organizations.adopt_email_domains(platform, org.org_id, [second, first.upper()]))

    assert log.operations() == ["GetItem", "TransactWriteItems"]
    assert adopted == organizations.AdoptedDomains(tuple(sorted([first, second])), (), tuple(sorted([first, second])))
    tenant = platform.with_scope(TenantScope(org.org_id))
    stored = run(organizations.get_organization(tenant))
    assert stored is not None and stored.email_domains == adopted.owned
    for domain in (first, second):
        marker = raw_get(client, table_name, layout.EMAIL_DOMAIN.key_at(domain))
        assert marker is not None and marker["orgId"] == {"S": org.org_id}
    [event] = run(audit.list_audit_events(tenant, PageRequest(first=5))).items
    assert event.action == "organization.adoptEmailDomains"


def test_adopt_email_domains__one_held_by_another__left_out_and_named(
    platform: Table, tenant: Tenant, client: DynamoDBClient, table_name: str
) -> None:
    free = unique_domain()
    org = domainless(client, platform, tenant.domain, free)

    adopted = run(organizations.adopt_email_domains(platform, org.org_id, [tenant.domain, free]))

    assert (adopted.assigned, adopted.held_elsewhere, adopted.owned) == ((free,), (tenant.domain,), (free,))
    marker = raw_get(client, table_name, layout.EMAIL_DOMAIN.key_at(tenant.domain))
    assert marker is not None and marker["orgId"] == {"S": tenant.org_id}
    everything_held = domainless(client, platform, tenant.domain)
    held = run(organizations.adopt_email_domains(platform, everything_held.org_id, [tenant.domain]))
    assert held == organizations.AdoptedDomains((), (tenant.domain,), ())


def test_adopt_email_domains__organisation_owns_domains__nothing_written(platform: Table, tenant: Tenant) -> None:
    with calls.listening() as log:
        adopted = run(organizations.adopt_email_domains(platform, tenant.org_id, [unique_domain()]))
    assert adopted == organizations.AdoptedDomains((), (), tenant.organization.email_domains)
    assert log.operations() == ["GetItem"]


def test_adopt_email_domains__marker_naming_it_already__taken_as_its_own(
    platform: Table, client: DynamoDBClient, table_name: str
) -> None:
    domain = unique_domain()
    org = domainless(client, platform, domain)
    write_items(client, table_name, [layout.EMAIL_DOMAIN.item(EmailDomain(domain, org.org_id))])  # left by hand

    adopted = run(organizations.adopt_email_domains(platform, org.org_id, [domain]))

    assert adopted.assigned == (domain,) and adopted.held_elsewhere == ()
