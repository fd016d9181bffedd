"""createOrganization (platform operators)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from datastore import organizations
from graphql_api import ids, input_paths
from graphql_api.context import RequestContext
from graphql_api.mutations.common import INPUT_ARGUMENT, run_write
from graphql_api.types.organization import Organization
from graphql_api.types.scalars import Plan

Info = strawberry.Info[RequestContext, None]


@input_paths.declare(email="adminEmail", firstName="adminFirstName", lastName="adminLastName")
@strawberry.input(description="A new organisation and the person who will administer it.")
class CreateOrganizationInput:
    name: str = strawberry.field(description="The organisation's name, 1 to 100 characters.")
    plan: Plan = strawberry.field(description="Its price plan; sets the subscription's seats.")
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
    table = context.platform_table()
    organization, admin = await run_write(
        context,
        organizations.create_organization,
        table,
        name=input.name,
        plan=input.plan,
        admin_email=input.admin_email,
        admin_first_name=input.admin_first_name,
        admin_last_name=input.admin_last_name,
    )
    return CreateOrganizationPayload(
        organization=Organization.of(organization),
        admin_id=strawberry.ID(ids.encode("Employee", admin.emp_id)),
    )
