"""setIdentityProvider, removeIdentityProvider (admins, and operators at onboarding); signOut,
signOutEverywhere (the signed-in person; admins for another employee).

Registering or changing a provider decides who signs in as whom: an ID token from it signs in
any of the organisation's people, admins included. So it takes a person, an admin or an
operator: an API key, even an ADMIN one, is refused (FORBIDDEN), so a leaked key cannot bring
in a provider of its own. Removing one needs no such care (it signs nobody in) and ends the
sessions begun through it (datastore/signin/sessions.py checks the provider at each refresh)."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated

import strawberry

from datastore.errors import InvalidInput, NotFound
from datastore.kinds.entities import Employee as EmployeeEntity
from datastore.signin import identity_providers, sessions
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope, SignInScope
from datastore.tenants import employees
from datastore.values.ids import OrgId
from graphql_api.auth.discovery import check_issuer, read_document
from graphql_api.auth.outbound import FetchRefused, fetch_json
from graphql_api.execution import ids
from graphql_api.execution.errors import bad_input, forbidden, token_missing
from graphql_api.request.context import RequestContext
from graphql_api.schema import permissions
from graphql_api.schema.mutations.common import INPUT_ARGUMENT, require_admin, run_write
from graphql_api.schema.types.identity_provider import IdentityProvider

Info = strawberry.Info[RequestContext, None]

API_KEY_REFUSED = "an API key cannot register or change the identity provider: an admin does it, signed in as a person"

_ORGANIZATION_ID_HELP = (
    "Platform operators: the organisation (at onboarding). Admins leave it out: they act on their own "
    "organisation (another's id is FORBIDDEN)."
)


@strawberry.input(description="The organisation's own OpenID provider.")
class SetIdentityProviderInput:
    issuer: str = strawberry.field(
        description="The provider's issuer URL, exactly as its ID tokens' `iss` spells it: https, with no query or "
        "fragment. The server fetches `<issuer>/.well-known/openid-configuration` now (within 5 s, at most 64 KiB, "
        "from a public address only) and reads the endpoints and keys from it; a document that cannot be fetched "
        "or names another issuer is BAD_USER_INPUT."
    )
    client_ids: list[str] = strawberry.field(
        description="The organisation's client ids at the provider, 1 to 5, the one browser apps sign in with "
        "first. A client id another organisation registered at the same issuer is a CONFLICT."
    )
    organization_id: strawberry.ID | None = strawberry.field(default=None, description=_ORGANIZATION_ID_HELP)


@strawberry.type(description="The result of setIdentityProvider.")
class SetIdentityProviderPayload:
    identity_provider: IdentityProvider = strawberry.field(description="The provider as it is now.")
    registered: bool = strawberry.field(
        description="True when the organisation had no provider before; false when this changed it (or changed "
        "nothing, when everything was already so)."
    )


@strawberry.input(description="Whose identity provider to remove.")
class RemoveIdentityProviderInput:
    organization_id: strawberry.ID | None = strawberry.field(default=None, description=_ORGANIZATION_ID_HELP)


@strawberry.type(description="The result of removeIdentityProvider.")
class RemoveIdentityProviderPayload:
    identity_provider: IdentityProvider = strawberry.field(description="The provider as it was before its removal.")


@strawberry.input(description="Which session to end: the one the access token was issued in, unless told.")
class SignOutInput:
    refresh_token: str | None = strawberry.field(
        default=None,
        description="A refresh token of the session to end instead (one of your own); for an access token not "
        "issued by POST /auth/token, which belongs to no session.",
    )


@strawberry.type(description="The result of signOut.")
class SignOutPayload:
    ended: bool = strawberry.field(
        description="True when a session ended now: its refresh tokens are refused from now on. False when it "
        "had already ended (or the refresh token is not one of yours). Access tokens already issued keep working "
        "until they expire (`expires_in`, 15 minutes by default)."
    )


@strawberry.input(description="Whose sessions to end: your own, unless an admin names an employee.")
class SignOutEverywhereInput:
    employee_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="Admins: an employee of the organisation (a lost laptop, say). Leave it out for your own sessions.",
    )


@strawberry.type(description="The result of signOutEverywhere.")
class SignOutEverywherePayload:
    employee_id: strawberry.ID = strawberry.field(description="Whose sessions ended (a global Employee id).")
    signed_out_at: datetime = strawberry.field(
        description="Every session the person began before this time has ended: their refresh tokens are refused "
        "from now on. Access tokens already issued keep working until they expire (15 minutes by default)."
    )


def _provider_table(context: RequestContext, organization_id: strawberry.ID | None) -> tuple[Table, OrgId]:
    """The table that may write the organisation's provider: an admin's own organisation, or the
    operator's provisioning scope for the one named."""
    principal = context.principal
    if principal is None:
        raise token_missing()
    if principal.is_platform:
        if organization_id is None:
            raise bad_input("input.organizationId", "platform operators name the organisation")
        org_id = ids.ORGANIZATION.decode(organization_id, "input.organizationId")
        scope = PlatformScope(provisioning=org_id, actor_id=principal.subject)
        return context.session.services.datastore.table(scope), org_id
    require_admin(context)
    assert principal.org_id is not None
    if (
        organization_id is not None
        and ids.ORGANIZATION.decode(organization_id, "input.organizationId") != principal.org_id
    ):
        raise forbidden("admins set their own organisation's identity provider")
    return context.session.tenant_table(), principal.org_id


async def set_identity_provider(
    info: Info, input: Annotated[SetIdentityProviderInput, INPUT_ARGUMENT]
) -> SetIdentityProviderPayload | None:
    context = info.context
    if context.principal is not None and context.principal.api_key:
        raise forbidden(API_KEY_REFUSED)
    table, org_id = _provider_table(context, input.organization_id)
    settings = context.session.services.settings
    development = settings.development
    issuer = identity_providers.issuer(input.issuer.strip())
    identity_providers.client_ids(input.client_ids)
    try:
        check_issuer(issuer, development=development)
        document = await context.session.services.run_blocking(
            read_document, issuer, functools.partial(fetch_json, allow_private=development), allow_http=development
        )
    except FetchRefused as refused:
        raise InvalidInput("issuer", str(refused)) from None
    oidc = settings.oidc
    reserved = set() if oidc is None else {(oidc.issuer, audience) for audience in oidc.audiences}
    provider, registered = await run_write(
        context,
        identity_providers.set_identity_provider,
        table,
        org_id,
        issuer_url=issuer,
        client_id_list=input.client_ids,
        authorization_endpoint=document.authorization_endpoint,
        token_endpoint=document.token_endpoint,
        reserved=reserved,
    )
    return SetIdentityProviderPayload(identity_provider=IdentityProvider.of(provider), registered=registered)


async def remove_identity_provider(
    info: Info, input: Annotated[RemoveIdentityProviderInput, INPUT_ARGUMENT]
) -> RemoveIdentityProviderPayload | None:
    context = info.context
    table, org_id = _provider_table(context, input.organization_id)
    removed = await run_write(context, identity_providers.remove_identity_provider, table, org_id)
    return RemoveIdentityProviderPayload(identity_provider=IdentityProvider.of(removed))


async def sign_out(info: Info, input: Annotated[SignOutInput, INPUT_ARGUMENT]) -> SignOutPayload | None:
    context = info.context
    emp_id = permissions.person(context)
    principal = permissions.caller(context)
    session_id = principal.session_id
    if input.refresh_token is not None:
        sign_in = context.session.services.datastore.table(SignInScope())
        grant = await context.session.run(sessions.find_grant, sign_in, input.refresh_token)
        if grant is None or grant.org_id != principal.org_id or grant.emp_id != emp_id:
            return SignOutPayload(ended=False)
        session_id = grant.session_id
    elif session_id is None:
        raise bad_input(
            "input.refreshToken",
            "this access token was not issued by POST /auth/token: name the session's refresh token",
        )
    ended = await run_write(
        context, sessions.end_session, context.session.tenant_table(), emp_id, session_id, sessions.SIGNED_OUT
    )
    return SignOutPayload(ended=ended)


async def sign_out_everywhere(
    info: Info, input: Annotated[SignOutEverywhereInput, INPUT_ARGUMENT]
) -> SignOutEverywherePayload | None:
    context = info.context
    table = context.session.tenant_table()
    if input.employee_id is None:
        emp_id = permissions.person(context)
    else:
        require_admin(context)
        emp_id = ids.EMPLOYEE.decode(input.employee_id, "input.employeeId")
        found = await context.session.run(employees.get_employee, table, emp_id, consistent=True)
        if found is None:
            raise NotFound(EmployeeEntity, emp_id)
    mark = await run_write(context, sessions.sign_out_everywhere, table, emp_id)
    return SignOutEverywherePayload(employee_id=strawberry.ID(ids.encode("Employee", emp_id)), signed_out_at=mark.at)
