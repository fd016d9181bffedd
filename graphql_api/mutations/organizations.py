"""createOrganization (platform operators)."""

from __future__ import annotations

import strawberry

from datastore import organizations
from graphql_api import ids
from graphql_api.context import RequestContext
from graphql_api.mutations.common import run_write
from graphql_api.types.organization import Organization
from graphql_api.types.scalars import Plan

Info = strawberry.Info[RequestContext, None]


@strawberry.input
class CreateOrganizationInput:
    name: str
    plan: Plan
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
    table = context.session.platform_table()
    organization, admin = await run_write(
        context,
        organizations.create_organization,
        table,
        name=input.name,
        plan=input.plan,
        admin_email=input.admin_email,
        admin_first_name=input.admin_first_name,
        admin_last_name=input.admin_last_name,
        fields={"email": "adminEmail", "firstName": "adminFirstName", "lastName": "adminLastName"},
    )
    return CreateOrganizationPayload(
        organization=Organization.of(organization),
        admin_id=strawberry.ID(ids.encode("Employee", admin.emp_id)),
    )
