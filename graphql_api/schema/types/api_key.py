"""ApiKey: an organisation's key for an integration, as admins list it (never its secret)."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime

import strawberry

from datastore.kinds import entities
from datastore.signin import api_keys
from datastore.table.pagination import Page, PageRequest
from datastore.table.scoped import Table
from graphql_api.execution import ids
from graphql_api.schema.types.scalars import ApiKeyStatus, Role


@strawberry.type(
    description="A key an integration (an HRIS sync, a script) sends as `Authorization: Bearer <secret>` to act "
    "with its role in the organisation. Only createApiKey ever shows the secret; admins only."
)
class ApiKey:
    id: strawberry.ID = strawberry.field(description="Opaque id of the key; pass it to revokeApiKey.")
    name: str = strawberry.field(description="What the key is for, 1 to 100 characters.")
    role: Role = strawberry.field(
        description="EMPLOYEE: reads the directory like an employee and runs no mutation. ADMIN: everything "
        "an admin may do, except what needs a person (`me` is null, applyToJob is FORBIDDEN)."
    )
    status: ApiKeyStatus = strawberry.field(description="ACTIVE until revoked; a REVOKED key is refused.")
    created_at: datetime = strawberry.field(description="When it was created.")
    last_used_at: datetime | None = strawberry.field(
        description="When it last authenticated a request, to the minute (recorded at most once a minute, "
        "shortly after the request); null if never used."
    )
    revoked_at: datetime | None = strawberry.field(description="When revokeApiKey revoked it; null while ACTIVE.")

    @classmethod
    def of(cls, key: entities.ApiKey) -> ApiKey:
        return cls(
            id=strawberry.ID(ids.encode("ApiKey", key.key_id)),
            name=key.name,
            role=key.role,
            status=key.status,
            created_at=key.created_at,
            last_used_at=key.last_used_at,
            revoked_at=key.revoked_at,
        )


def api_keys_of_org(table: Table, _parent: str | None, request: PageRequest) -> Awaitable[Page[entities.ApiKey]]:
    """The list fetcher of Organization.apiKeys (types/connection.py)."""
    return table.page(api_keys.api_keys_of(table.tenant.org_id), request)
