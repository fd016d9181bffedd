"""createApiKey, revokeApiKey (admins)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from datastore.signin import api_keys
from graphql_api.execution import ids
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import INPUT_ARGUMENT, require_admin, run_write
from graphql_api.schema.types.api_key import ApiKey
from graphql_api.schema.types.scalars import Role

Info = strawberry.Info[RequestContext, None]


@strawberry.input(description="A new API key.")
class CreateApiKeyInput:
    name: str = strawberry.field(
        description='What the key is for ("HRIS sync"), 1 to 100 characters (surrounding spaces are trimmed).'
    )
    role: Role = strawberry.field(
        description="EMPLOYEE (read-only directory) or ADMIN; MANAGER is BAD_USER_INPUT (a key manages no department)."
    )


@strawberry.type(description="The result of createApiKey: the key, and its secret, shown this once.")
class CreateApiKeyPayload:
    api_key: ApiKey = strawberry.field(description="The new key, ACTIVE.")
    secret: str = strawberry.field(
        description="Send it as `Authorization: Bearer <secret>`. Shown only here: the server keeps only its "
        "SHA-256, so a lost secret cannot be recovered (revoke the key and create another)."
    )


@strawberry.input(description="The key to revoke.")
class RevokeApiKeyInput:
    id: strawberry.ID = strawberry.field(description="The key's id (`ApiKey.id`).")


@strawberry.type(description="The result of revokeApiKey.")
class RevokeApiKeyPayload:
    api_key: ApiKey = strawberry.field(description="The key, now REVOKED, with revokedAt.")


async def create_api_key(info: Info, input: Annotated[CreateApiKeyInput, INPUT_ARGUMENT]) -> CreateApiKeyPayload | None:
    context = info.context
    require_admin(context)
    key, secret = await run_write(
        context, api_keys.create_api_key, context.session.tenant_table(), name=input.name, role=input.role
    )
    return CreateApiKeyPayload(api_key=ApiKey.of(key), secret=secret)


async def revoke_api_key(info: Info, input: Annotated[RevokeApiKeyInput, INPUT_ARGUMENT]) -> RevokeApiKeyPayload | None:
    context = info.context
    require_admin(context)
    key_id = ids.API_KEY.decode(input.id, "input.id")
    revoked = await run_write(context, api_keys.revoke_api_key, context.session.tenant_table(), key_id)
    return RevokeApiKeyPayload(api_key=ApiKey.of(revoked))
