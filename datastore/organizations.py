"""Organisations and their subscriptions (AP1, AP13, AP14) and creating one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from datastore import items, keys, transact, validation, writes
from datastore.changes import Change
from datastore.employees import admin_ops, new_employee
from datastore.entities import (
    Employee,
    Organization,
    OrganizationStatus,
    Plan,
    Role,
    Subscription,
)
from datastore.errors import Conflict
from datastore.pagination import Page, PageRequest
from datastore.scope import PlatformScope, actor_of
from datastore.table import Table

SEATS_BY_PLAN: Final = {Plan.FREE: 10, Plan.PRO: 250, Plan.ENTERPRISE: 2_000}


@dataclass(frozen=True, slots=True)
class OrganizationWithSubscription:
    organization: Organization
    subscription: Subscription | None


def get_organization(table: Table) -> Organization | None:
    """AP1: one GetItem."""
    item = table.get(keys.organization_key(table.tenant.org_id))
    return None if item is None else items.organization_from(item)


def get_organization_with_subscription(table: Table) -> OrganizationWithSubscription | None:
    """AP13: one Query on the organisation's partition, sort keys beginning with ``#``."""
    result = table.query(keys.org_pk(table.tenant.org_id), sk_prefix=keys.ORG_HEADER_PREFIX, limit=10)
    organization: Organization | None = None
    subscription: Subscription | None = None
    for item in result.items:
        if item[keys.SK]["S"] == keys.METADATA_SK:
            organization = items.organization_from(item)
        elif item[keys.SK]["S"] == keys.SUBSCRIPTION_SK:
            subscription = items.subscription_from(item)
    if organization is None:
        return None
    return OrganizationWithSubscription(organization, subscription)


def list_organizations(table: Table, request: PageRequest) -> Page[Organization]:
    """AP14: the platform's organisations by name, one Query on GSI1."""
    return table.query_page(keys.ORGS_PK, request, items.organization_from, index=keys.GSI1)


def create_organization(
    table: Table,
    *,
    name: str,
    plan: Plan,
    admin_email: str,
    admin_first_name: str,
    admin_last_name: str,
) -> tuple[Organization, Employee]:
    """A new organisation, its subscription and its first admin, in one transaction.

    Its audit trail opens with the ``organization.create`` event, written alongside. (An
    idempotency key would need a home before the organisation exists; operators creating
    organisations retry by name instead.)
    """
    name = validation.name(name)
    org_id = keys.new_id()
    created_at = items.now()
    organization = Organization(org_id, name, plan, OrganizationStatus.ACTIVE, created_at)
    subscription = Subscription(org_id, plan, SEATS_BY_PLAN[plan], None, created_at + timedelta(days=30))
    admin = new_employee(
        org_id,
        email=admin_email,
        first_name=admin_first_name,
        last_name=admin_last_name,
        department_id=None,
        role=Role.ADMIN,
        hired_at=created_at,
    )
    provisioning = table.with_scope(PlatformScope(provisioning=org_id, actor_id=actor_of(table.scope)))

    def taken(_old: items.Item | None) -> Conflict:
        return Conflict("the new organisation's id is already taken")

    org_item = items.organization_item(organization)
    writes.commit(
        provisioning,
        [
            transact.put_new(org_item, taken),
            transact.put_new(items.subscription_item(subscription), taken),
            *admin_ops(admin),
        ],
        Change("organization.create", items.ORGANIZATION, org_id, org_id, None, org_item),
    )
    return organization, admin
