"""createOrganization, addEmailDomain and closeOrganization (platform operators)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

import strawberry

from datastore.lifecycle import offboarding
from datastore.tenancy.scope import LifecycleScope
from datastore.tenants import organizations
from graphql_api.execution import ids
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import INPUT_ARGUMENT, run_write
from graphql_api.schema.types.organization import Organization
from graphql_api.schema.types.scalars import Plan

Info = strawberry.Info[RequestContext, None]


@strawberry.input(description="A new organisation and the person who will administer it.")
class CreateOrganizationInput:
    name: str = strawberry.field(description="The organisation's name, 1 to 100 characters.")
    plan: Plan = strawberry.field(description="Its price plan; sets the subscription's seats.")
    email_domains: list[str] = strawberry.field(
        description="The email domains it owns (such as example.com), held by no other organisation; "
        "its employees' emails must be in them. The admin's email must be in one."
    )
    admin_email: str = strawberry.field(
        description="The first admin's work email, unique across the platform (one in use is a CONFLICT); "
        "they sign in with it."
    )
    admin_first_name: str = strawberry.field(description="The first admin's given name, 1 to 100 characters.")
    admin_last_name: str = strawberry.field(description="The first admin's family name, 1 to 100 characters.")


@strawberry.type(description="The result of createOrganization.")
class CreateOrganizationPayload:
    organization: Organization = strawberry.field(
        description="The new organisation, ACTIVE. Read only its own fields here (id, name, plan, status, "
        "createdAt, subscription): its lists are for its own members, not the platform operator."
    )
    admin_id: strawberry.ID = strawberry.field(description="The first admin's global Employee id.")


async def create_organization(
    info: Info, input: Annotated[CreateOrganizationInput, INPUT_ARGUMENT]
) -> CreateOrganizationPayload | None:
    context = info.context
    table = context.session.platform_table()
    organization, admin = await run_write(
        context,
        organizations.create_organization,
        table,
        name=input.name,
        plan=input.plan,
        email_domains=input.email_domains,
        admin_email=input.admin_email,
        admin_first_name=input.admin_first_name,
        admin_last_name=input.admin_last_name,
    )
    return CreateOrganizationPayload(
        organization=Organization.of(organization),
        admin_id=strawberry.ID(ids.encode("Employee", admin.emp_id)),
    )


@strawberry.input(description="An email domain for an existing organisation.")
class AddEmailDomainInput:
    org_id: strawberry.ID = strawberry.field(description="The organisation's id.")
    domain: str = strawberry.field(description="A domain no other organisation holds, such as example.com.")


@strawberry.type(description="The result of addEmailDomain.")
class AddEmailDomainPayload:
    organization: Organization = strawberry.field(description="With its email domains.")


async def add_email_domain(
    info: Info, input: Annotated[AddEmailDomainInput, INPUT_ARGUMENT]
) -> AddEmailDomainPayload | None:
    context = info.context
    table = context.session.platform_table()
    org_id = ids.ORGANIZATION.decode(input.org_id, "input.orgId")
    organization = await run_write(context, organizations.add_email_domain, table, org_id, input.domain)
    return AddEmailDomainPayload(organization=Organization.of(organization))


@strawberry.input(description="The organisation to close.")
class CloseOrganizationInput:
    org_id: strawberry.ID = strawberry.field(description="The organisation's id.")


@strawberry.type(description="The result of closeOrganization.")
class CloseOrganizationPayload:
    organization: Organization = strawberry.field(description="The organisation, now CLOSING.")
    delete_after: datetime = strawberry.field(
        description="When the grace period ends: from then on `server.py offboard` deletes all its data."
    )


async def close_organization(
    info: Info, input: Annotated[CloseOrganizationInput, INPUT_ARGUMENT]
) -> CloseOrganizationPayload | None:
    context = info.context
    context.session.platform_table()  # operators only (else FORBIDDEN)
    org_id = ids.ORGANIZATION.decode(input.org_id, "input.orgId")
    principal = context.principal
    operator = None if principal is None else principal.subject
    services = context.session.services
    table = services.datastore.table(LifecycleScope(org_id, "offboard", operator))
    grace = timedelta(days=services.settings.offboarding_grace_days)
    closed = await run_write(context, offboarding.close, table, org_id, grace=grace)
    return CloseOrganizationPayload(
        organization=Organization.of(closed.organization), delete_after=closed.receipt.delete_after
    )
