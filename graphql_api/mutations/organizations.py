"""createOrganization and addEmailDomain (platform operators)."""

from __future__ import annotations

import strawberry

from datastore import organizations
from graphql_api import ids
from graphql_api.context import RequestContext
from graphql_api.mutations.common import decode_id, run_write
from graphql_api.types.organization import Organization
from graphql_api.types.scalars import Plan

Info = strawberry.Info[RequestContext, None]


@strawberry.input
class CreateOrganizationInput:
    name: str
    plan: Plan
    email_domains: list[str] = strawberry.field(
        description="The email domains it owns (such as example.com), held by no other organisation; "
        "its employees' emails must be in them. The admin's email must be in one."
    )
    admin_email: str
    admin_first_name: str
    admin_last_name: str


@strawberry.type
class CreateOrganizationPayload:
    organization: Organization = strawberry.field(
        description="Its scalar fields; its data is for its own members only."
    )
    admin_id: strawberry.ID = strawberry.field(description="The first admin's employee id.")


async def create_organization(info: Info, input: CreateOrganizationInput) -> CreateOrganizationPayload | None:
    context = info.context
    table = context.platform_table()
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
        fields={"email": "adminEmail", "firstName": "adminFirstName", "lastName": "adminLastName"},
    )
    return CreateOrganizationPayload(
        organization=Organization.of(organization),
        admin_id=strawberry.ID(ids.encode("Employee", admin.emp_id)),
    )


@strawberry.input
class AddEmailDomainInput:
    org_id: strawberry.ID = strawberry.field(description="The organisation's id.")
    domain: str = strawberry.field(description="A domain no other organisation holds, such as example.com.")


@strawberry.type
class AddEmailDomainPayload:
    organization: Organization = strawberry.field(description="With its email domains.")


async def add_email_domain(info: Info, input: AddEmailDomainInput) -> AddEmailDomainPayload | None:
    context = info.context
    table = context.platform_table()
    (org_id,) = decode_id(input.org_id, "Organization", "input.orgId")
    organization = await run_write(context, organizations.add_email_domain, table, org_id, input.domain)
    return AddEmailDomainPayload(organization=Organization.of(organization))
