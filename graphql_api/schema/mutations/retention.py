"""setAuditRetention (admins): how long the organisation's audit events are kept from now on."""

from __future__ import annotations

from typing import Annotated

import strawberry

from datastore.config import DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS, MIN_RETENTION_DAYS
from datastore.tenants import organizations
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import INPUT_ARGUMENT, require_admin, run_write
from graphql_api.schema.types.organization import Organization

Info = strawberry.Info[RequestContext, None]


@strawberry.input(description="The organisation's audit retention.")
class SetAuditRetentionInput:
    days: int | None = strawberry.field(
        description=f"How many days each audit event is kept after it happened, {MIN_RETENTION_DAYS} to "
        f"{MAX_RETENTION_DAYS}; null returns to the platform's default (AUDIT_RETENTION_DAYS, "
        f"{DEFAULT_RETENTION_DAYS} unless the operator set another). Outside the bounds: BAD_USER_INPUT."
    )


@strawberry.type(description="The result of setAuditRetention.")
class SetAuditRetentionPayload:
    organization: Organization = strawberry.field(description="The organisation, with its `auditRetentionDays`.")


async def set_audit_retention(
    info: Info, input: Annotated[SetAuditRetentionInput, INPUT_ARGUMENT]
) -> SetAuditRetentionPayload | None:
    context = info.context
    require_admin(context)
    updated = await run_write(context, organizations.set_audit_retention, context.session.tenant_table(), input.days)
    return SetAuditRetentionPayload(organization=Organization.of(updated))
