"""GET /auth/discovery?email=: where a browser app sends a person to sign in (home realm discovery).

The email's domain names its organisation (the domain's marker, one GetItem), and the
organisation its own identity provider (one GetItem in its partition). The answer is that
provider's issuer, authorization and token endpoints and the client id to sign in with (its
first); for a domain whose organisation has no provider of its own, and for a domain no
organisation owns, the answer is the platform's provider (``OIDC_ISSUER``), byte for byte
the same, so the endpoint tells nobody which domains are customers'. With no platform
provider configured both are the same 404. Only the domain is used: nothing is said about
whether the address has an account.

The same bytes are not enough: a customer's domain cost a second read (its provider's record)
that a domain nobody owns did not, and that read showed in the answer's timing (+1.2-1.6 ms
median). So both do the same work: a domain nobody owns reads the provider record of an
organisation that cannot exist (``NO_ORGANIZATION``), one GetItem alike, and both go on to
the platform's document. bench/discovery.py prints both paths' median times.
"""

from __future__ import annotations

import logging
from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse

from datastore.errors import InvalidInput, Unavailable
from datastore.kinds.entities import IdentityProvider
from datastore.signin import identity_providers
from datastore.tenancy.scope import SignInScope, TenantScope
from datastore.values import validation
from datastore.values.ids import OrgId
from graphql_api.auth.discovery import DefaultEndpoints, ProviderDocument
from graphql_api.auth.outbound import FetchRefused
from graphql_api.request.context import Services

log = logging.getLogger("hr.signin")

PATH: Final = "/auth/discovery"
NO_STORE: Final = {"Cache-Control": "no-store"}
NOT_FOUND: Final = "no identity provider signs in this email"
# An organisation id no organisation has (ids are ULIDs minted from the clock, this one from
# time zero): whose provider record a domain nobody owns reads, so it costs what a customer's
# domain costs.
NO_ORGANIZATION: Final = OrgId("0" * 26)


def _error(error: str, description: str, status_code: int) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status_code, headers=NO_STORE)


class HomeRealmDiscovery:
    def __init__(self, services: Services, default: DefaultEndpoints | None = None) -> None:
        self.services = services
        oidc = services.settings.oidc
        self.default = default if default is not None else (None if oidc is None else DefaultEndpoints(oidc))

    async def _own_provider(self, domain: str) -> IdentityProvider | None:
        """The domain's organisation's provider, if it has one. Two GetItems whoever
        owns the domain, nobody included (the module docstring says why)."""
        datastore = self.services.datastore
        owner = await identity_providers.domain_owner(datastore.table(SignInScope()), domain)
        org_id = NO_ORGANIZATION if owner is None else owner
        provider = await identity_providers.get_identity_provider(datastore.table(TenantScope(org_id)), org_id)
        return None if owner is None else provider

    async def endpoint(self, request: Request) -> JSONResponse:
        email = request.query_params.get("email")
        if email is None:
            return _error("invalid_request", "email is missing", 400)
        try:
            domain = validation.email_domain(validation.email(email))
        except InvalidInput as invalid:
            return _error("invalid_request", f"email {invalid.reason}", 400)
        try:
            provider = await self._own_provider(domain)
        except Unavailable:
            log.warning("discovery failed: DynamoDB is unavailable")
            return _error("temporarily_unavailable", "discovery is temporarily unavailable; try again", 503)
        if provider is not None:
            return _answer(
                provider.issuer, provider.authorization_endpoint, provider.token_endpoint, provider.client_ids[0]
            )
        if self.default is None:
            return _error("not_found", NOT_FOUND, 404)
        try:
            document: ProviderDocument = await self.services.run_blocking(self.default.document)
        except FetchRefused as refused:
            log.warning("discovery failed: the platform provider's document: %s", refused)
            return _error("temporarily_unavailable", "discovery is temporarily unavailable; try again", 503)
        audiences = self.default.settings.audiences
        return _answer(document.issuer, document.authorization_endpoint, document.token_endpoint, audiences[0])


def _answer(issuer: str, authorization_endpoint: str, token_endpoint: str, client_id: str) -> JSONResponse:
    return JSONResponse(
        {
            "issuer": issuer,
            "authorization_endpoint": authorization_endpoint,
            "token_endpoint": token_endpoint,
            "client_id": client_id,
        },
        headers=NO_STORE,
    )
