"""Organisations and their subscriptions (AP1, AP13, AP14), creating one, adding a domain.

An organisation owns one or more email domains, each held by one organisation across the
platform: a domain marker item (``DOMAIN#<domain>``) written in the same transaction as the
organisation's item, on the condition that it does not exist yet. Its employees' emails
must be in its domains (``datastore.tenants.employees`` checks the marker in each such write).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Final

from datastore.errors import Conflict, InvalidInput, NotFound, ScopeViolation
from datastore.kinds import layout
from datastore.kinds.entities import (
    EmailDomain,
    Employee,
    Organization,
    OrganizationStatus,
    Plan,
    Role,
    Subscription,
)
from datastore.table import by_id, retention, transact, updates
from datastore.table.pagination import Page, PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import PlatformScope, actor_of
from datastore.tenants.employees import admin_ops, new_employee
from datastore.values import items, validation
from datastore.values.ids import OrgId, new_id
from datastore.writes import envelope
from datastore.writes.changes import Change

SEATS_BY_PLAN: Final = {Plan.FREE: 10, Plan.PRO: 250, Plan.ENTERPRISE: 2_000}


@dataclass(frozen=True, slots=True)
class AdoptedDomains:
    """What ``adopt_email_domains`` did: the domains given, and those another organisation holds.

    ``owned`` is the organisation's domains afterwards: those given, or, when it owned some
    already (nothing given then), those.
    """

    assigned: tuple[str, ...]
    held_elsewhere: tuple[str, ...]
    owned: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OrganizationWithSubscription:
    organization: Organization
    subscription: Subscription | None


async def get_organization(table: Table) -> Organization | None:
    """AP1: one GetItem."""
    return await by_id.get(table, layout.ORGANIZATION)


async def get_organization_with_subscription(table: Table) -> OrganizationWithSubscription | None:
    """AP13: one Query on the organisation's partition, sort keys beginning with ``#``."""
    org_id = table.tenant.org_id
    result = await table.query(layout.ORGANIZATION.partition(org_id), sk_prefix=keys.ORG_HEADER_PREFIX, limit=10)
    organization: Organization | None = None
    subscription: Subscription | None = None
    for item in result.items:
        if item[keys.SK]["S"] == layout.ORGANIZATION.key_at(org_id).sk:
            organization = layout.ORGANIZATION.read(item)
        elif item[keys.SK]["S"] == layout.SUBSCRIPTION.key_at(org_id).sk:
            subscription = layout.SUBSCRIPTION.read(item)
    if organization is None:
        return None
    return OrganizationWithSubscription(organization, subscription)


async def list_organizations(table: Table, request: PageRequest) -> Page[Organization]:
    """AP14: the platform's organisations by name, one Query on GSI1."""
    return await table.query_page(
        layout.ORGANIZATION.index_partition(), request, layout.ORGANIZATION.read, index=keys.GSI1
    )


def _provisioning(table: Table, org_id: OrgId) -> Table:
    """``table`` narrowed to writing ``org_id``'s partition: the platform operator's alone."""
    if not isinstance(table.scope, PlatformScope):
        raise ScopeViolation(f"{table.scope.name} may not provision organisations")
    return table.with_scope(PlatformScope(provisioning=org_id, actor_id=actor_of(table.scope)))


def _domain_op(domain: str, org_id: OrgId) -> transact.Op:
    """The domain's marker, written only if no organisation holds the domain yet."""
    return transact.put_new(layout.EMAIL_DOMAIN.item(EmailDomain(domain, org_id)), _domain_taken(domain))


def _domain_taken(domain: str) -> transact.FailureHandler:
    # Only the platform operator writes domains, and sees every organisation anyway.
    def handler(_old: items.Item | None) -> Conflict:
        return Conflict(f"the email domain {domain} belongs to another organisation")

    return handler


async def create_organization(
    table: Table,
    *,
    name: str,
    plan: Plan,
    email_domains: Sequence[str],
    admin_email: str,
    admin_first_name: str,
    admin_last_name: str,
) -> tuple[Organization, Employee]:
    """A new organisation, its subscription, its domains and its first admin, in one transaction.

    Each domain's marker is written only if no organisation holds the domain yet, and the
    admin's email must be in one of the domains. Its audit trail opens with the
    ``organization.create`` event, written alongside. (An idempotency key would need a home
    before the organisation exists; operators creating organisations retry by name instead.)
    """
    name = validation.name(name)
    domains = tuple(sorted(validation.domains(email_domains)))
    admin_email = validation.email(admin_email)
    if validation.email_domain(admin_email) not in domains:
        raise InvalidInput("email", "must be an address in one of the organisation's email domains")
    org_id = OrgId(new_id())
    created_at = items.now()
    organization = Organization(org_id, name, plan, OrganizationStatus.ACTIVE, created_at, domains)
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
    provisioning = _provisioning(table, org_id)

    def taken(_old: items.Item | None) -> Conflict:
        return Conflict("the new organisation's id is already taken")

    org_item = layout.ORGANIZATION.item(organization)
    provisioning.retention.know(organization)  # its events have the default: nothing to read
    await envelope.commit(
        provisioning,
        [
            transact.put_new(org_item, taken),
            transact.put_new(layout.SUBSCRIPTION.item(subscription), taken),
            *(_domain_op(domain, org_id) for domain in domains),
            *admin_ops(admin),
        ],
        Change("organization.create", layout.ORGANIZATION.tag, org_id, org_id, None, org_item),
    )
    return organization, admin


async def add_email_domain(table: Table, org_id: OrgId, domain: str) -> Organization:
    """Give an existing organisation one more email domain (platform operators).

    The domain's marker and the organisation's list of domains change in one transaction;
    a domain the organisation owns already changes nothing.
    """
    domain = validation.domain(domain)
    provisioning = _provisioning(table, org_id)
    found = await provisioning.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
    if found is None:
        raise NotFound(Organization, org_id)
    current = layout.ORGANIZATION.read(found)
    if domain in current.email_domains:
        return current
    if len(current.email_domains) >= validation.EMAIL_DOMAINS_MAX:
        raise InvalidInput("domain", f"an organisation owns at most {validation.EMAIL_DOMAINS_MAX} domains")
    updated = replace(current, email_domains=tuple(sorted((*current.email_domains, domain))))
    before, after = layout.ORGANIZATION.item(current), layout.ORGANIZATION.item(updated)
    # The domains as read, or none yet (an empty list is stored as no attribute).
    old_domains = before.get(layout.EMAIL_DOMAINS)
    if old_domains is None:
        unchanged, values = f"attribute_not_exists({layout.EMAIL_DOMAINS})", {}
    else:
        unchanged, values = f"{layout.EMAIL_DOMAINS} = :before", {":before": old_domains}

    def changed(_old: items.Item | None) -> Conflict:
        return Conflict("the organisation's domains changed meanwhile; try again")

    provisioning.retention.know(current)  # read just now: its event needs no read of its own
    await envelope.commit(
        provisioning,
        [
            _domain_op(domain, org_id),
            transact.update(
                layout.ORGANIZATION.key_at(org_id),
                [updates.Set(layout.EMAIL_DOMAINS, after[layout.EMAIL_DOMAINS])],
                condition=f"attribute_exists(PK) AND {unchanged}",
                values=values or None,
                on_failed=changed,
            ),
        ],
        Change("organization.addEmailDomain", layout.ORGANIZATION.tag, org_id, org_id, before, after),
    )
    return updated


class _HeldElsewhere(Conflict):
    def __init__(self, domain: str) -> None:
        self.domain = domain
        super().__init__(f"the email domain {domain} belongs to another organisation")


def _held_elsewhere(domain: str) -> transact.FailureHandler:
    def handler(_old: items.Item | None) -> _HeldElsewhere:
        return _HeldElsewhere(domain)

    return handler


class _OwnsDomains(Conflict):
    """The organisation owned domains by the time the write landed."""


async def adopt_email_domains(table: Table, org_id: OrgId, domains: Sequence[str]) -> AdoptedDomains:
    """Give an organisation that owns no email domain yet those of ``domains`` no other holds.

    For organisations written before organisations owned domains (``server.py migrate``):
    one transaction puts each domain's marker, on the condition that no other organisation
    holds it, and sets the organisation's list, on the condition that it has none. A domain
    held elsewhere is left out and the rest tried again; an organisation that owns domains
    already is left as it is. So the organisation ends with all of the free domains or,
    when it had some, its own: never a part of a run's choice. Nothing is read of another
    organisation; ``held_elsewhere`` names the domains only.
    """
    wanted = list(dict.fromkeys(validation.domain(domain) for domain in domains))
    if len(wanted) > validation.EMAIL_DOMAINS_MAX:
        raise InvalidInput("email_domains", f"an organisation owns at most {validation.EMAIL_DOMAINS_MAX} domains")
    provisioning = _provisioning(table, org_id)
    held: list[str] = []
    # Each try either gives the domains, leaves one out, or finds domains the organisation
    # owns by now: a try more than the domains ends it, unless writes keep racing this one.
    for _try in range(len(wanted) + 3):
        found = await provisioning.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
        if found is None:
            raise NotFound(Organization, org_id)
        current = layout.ORGANIZATION.read(found)
        provisioning.retention.know(current)
        if current.email_domains:
            return AdoptedDomains((), tuple(held), current.email_domains)
        if not wanted:
            return AdoptedDomains((), tuple(held), ())
        updated = replace(current, email_domains=tuple(sorted(wanted)))
        after = layout.ORGANIZATION.item(updated)

        def owns(_old: items.Item | None) -> _OwnsDomains:
            return _OwnsDomains("the organisation owns email domains by now")

        markers = [
            transact.put(
                layout.EMAIL_DOMAIN.item(EmailDomain(domain, org_id)),
                # A marker naming this organisation already (written by hand) is its own.
                condition=f"attribute_not_exists(PK) OR {layout.ORG_ID} = :org",
                values={":org": items.s(org_id)},
                on_failed=_held_elsewhere(domain),
            )
            for domain in wanted
        ]
        try:
            await envelope.commit(
                provisioning,
                [
                    *markers,
                    transact.update(
                        layout.ORGANIZATION.key_at(org_id),
                        [updates.Set(layout.EMAIL_DOMAINS, after[layout.EMAIL_DOMAINS])],
                        condition=f"attribute_exists(PK) AND attribute_not_exists({layout.EMAIL_DOMAINS})",
                        on_failed=owns,
                    ),
                ],
                Change("organization.adoptEmailDomains", layout.ORGANIZATION.tag, org_id, org_id, found, after),
            )
        except _HeldElsewhere as refused:
            wanted.remove(refused.domain)
            held.append(refused.domain)
            continue
        except _OwnsDomains:
            continue  # read it again: its own domains are the answer
        return AdoptedDomains(tuple(sorted(wanted)), tuple(held), updated.email_domains)
    raise Conflict("the organisation's domains kept changing; try again")


async def set_audit_retention(table: Table, days: int | None) -> Organization:
    """How long the organisation's audit events are kept from now on (its admins): ``days``
    within MIN_RETENTION_DAYS..MAX_RETENTION_DAYS (datastore/config.py), or None for the
    platform's default.

    Events written before keep their expiry (datastore/table/retention.py); this write's own event is
    kept under the retention it replaces. Setting what is set already writes nothing.
    """
    if days is not None:
        days = retention.checked_days(days)
    org_id = table.tenant.org_id
    found = await table.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
    if found is None:
        raise NotFound(Organization, org_id)
    current = layout.ORGANIZATION.read(found)
    if current.audit_retention_days == days:
        return current
    updated = replace(current, audit_retention_days=days)
    before, after = layout.ORGANIZATION.item(current), layout.ORGANIZATION.item(updated)
    name = layout.AUDIT_RETENTION_DAYS
    if current.audit_retention_days is None:
        unchanged, values = f"attribute_not_exists({name})", {}
    else:
        unchanged, values = f"{name} = :before", {":before": items.n(current.audit_retention_days)}
    action: updates.Action = updates.Remove(name) if days is None else updates.Set(name, items.n(days))

    def changed(_old: items.Item | None) -> Conflict:
        return Conflict("the organisation's audit retention changed meanwhile; try again")

    await envelope.commit(
        table,
        [
            transact.update(
                layout.ORGANIZATION.key_at(org_id),
                [action],
                condition=f"attribute_exists(PK) AND {unchanged}",
                values=values or None,
                on_failed=changed,
            )
        ],
        Change("organization.setAuditRetention", layout.ORGANIZATION.tag, org_id, org_id, before, after),
    )
    table.retention.know(updated)  # the request's later writes keep their events as long
    return updated
