"""IdentityProvider: an organisation's own OpenID provider, as its admins and operators see it."""

from __future__ import annotations

from datetime import datetime

import strawberry

from datastore.kinds import entities


@strawberry.type(
    description="The organisation's own OpenID provider (its Okta, Entra ID, Google Workspace...): its people "
    "sign in through it, and only they (emails in the organisation's domains). Without one they sign in through "
    "the platform's provider. Set by setIdentityProvider, removed by removeIdentityProvider."
)
class IdentityProvider:
    issuer: str = strawberry.field(
        description="The provider's issuer URL, exactly as its ID tokens' `iss` spells it; its discovery document "
        "is `<issuer>/.well-known/openid-configuration`."
    )
    client_ids: list[str] = strawberry.field(
        description="The organisation's client ids at the provider: an ID token must be issued to one of them "
        "(its `azp`, or its one `aud`). The first is the one GET /auth/discovery sends browser apps to sign in with."
    )
    authorization_endpoint: str = strawberry.field(
        description="Where a browser is sent to sign in, read from the discovery document when the provider was set."
    )
    token_endpoint: str = strawberry.field(
        description="Where a browser app trades the authorization code for an ID token, read from the discovery "
        "document when the provider was set."
    )
    created_at: datetime = strawberry.field(description="When the provider was first registered.")
    updated_at: datetime = strawberry.field(description="When it last changed.")
    version: int = strawberry.field(description="1 when registered, one more with each change.")

    @classmethod
    def of(cls, provider: entities.IdentityProvider) -> IdentityProvider:
        return cls(
            issuer=provider.issuer,
            client_ids=list(provider.client_ids),
            authorization_endpoint=provider.authorization_endpoint,
            token_endpoint=provider.token_endpoint,
            created_at=provider.created_at,
            updated_at=provider.updated_at,
            version=provider.version,
        )
