"""POST /auth/token: sign-in by SSO (an OAuth 2.0 Token Exchange, RFC 8693) and refresh (RFC 6749 6).

Signing in: a browser app sends the ID token its identity provider gave it. The provider is
picked by the token's ``iss`` (and its ``azp``, or its one ``aud``): the platform's own
(``OIDC_ISSUER``), or an organisation's, found with one GetItem on the provider's client item
(datastore/signin/identity_providers.py) and verified against the keys its discovery document names
(graphql_api/auth/discovery.py). We find the person by email (AP4: one GetItem on the identity
item), read their organisation, their employee record and the organisation's own provider
together (one BatchGetItem), start a session (datastore/signin/sessions.py: one transaction) and
answer with the API's own short-lived access token and the session's first refresh token. The
role is the employee record's, never the provider's.

An organisation's provider signs in only that organisation's people, with emails in its own
domains; an organisation with a provider of its own is no longer signed in by the platform's.

Refreshing: ``grant_type=refresh_token`` rotates the session (datastore/signin/sessions.py): a new
access token and a new refresh token, the old one dead; a used one presented again ends the
whole session, unless it comes within the reuse leeway (``REFRESH_REUSE_LEEWAY_SECONDS``) of
its own rotation, as a second tab refreshing at the same moment does: then it gets the same
answer as the refresh that rotated it, the same refresh token and the same access token (its
times are the rotation's, so the HS256 token is the same bytes).

Errors follow RFC 6749 section 5.2. Every reason that is about the account (unknown email,
unverified email, another organisation's provider, suspended organisation, inactive employee)
gets one and the same ``invalid_grant`` body, and so does every refresh token that signs nobody
in (unknown, used, ended, expired), so the endpoint cannot tell anyone who has an account; the
server logs the real reason in one line.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from datetime import datetime, timedelta
from typing import Any, Final
from urllib.parse import parse_qsl

import jwt
from starlette.requests import Request
from starlette.responses import JSONResponse

from datastore.errors import InvalidInput, Unavailable
from datastore.kinds.entities import Employee, EmployeeStatus, Organization, OrganizationStatus
from datastore.signin import identities, identity_providers, sessions
from datastore.tenancy.scope import SignInScope, TenantScope
from datastore.values import validation
from datastore.values.ids import OrgId, SessionId
from graphql_api.auth.discovery import Providers
from graphql_api.auth.oidc import IdTokenRejected, IdTokenVerifier
from graphql_api.auth.tokens import issue_token
from graphql_api.request.context import Services

log = logging.getLogger("hr.signin")


GRANT_TYPE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
REFRESH_GRANT_TYPE: Final = "refresh_token"
ID_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id_token"
ACCESS_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:access_token"
FORM: Final = "application/x-www-form-urlencoded"
# RFC 6749 5.1: token responses must not be cached.
NO_STORE: Final = {"Cache-Control": "no-store", "Pragma": "no-cache"}
# The one answer for every account reason (see the module docstring).
REFUSED: Final = "the subject token does not identify an active account"
# The one answer for every refresh token that signs nobody in.
REFRESH_REFUSED: Final = "the refresh token is not valid"
NO_PROVIDER: Final = "the ID token's issuer is not an identity provider of this server"
# A token exchange has a handful of parameters; more is not a real client.
MAX_FIELDS: Final = 16


class ExchangeError(Exception):
    """An RFC 6749 5.2 error response."""

    def __init__(self, error: str, description: str, status_code: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status_code = status_code


class Refused(Exception):
    """An account reason: logged as is, answered with REFUSED (REFRESH_REFUSED for a refresh)."""


def _error_response(error: ExchangeError) -> JSONResponse:
    body = {"error": error.error, "error_description": error.description}
    return JSONResponse(body, status_code=error.status_code, headers=NO_STORE)


def _unavailable() -> ExchangeError:
    log.warning("sign-in failed: DynamoDB is unavailable")
    return ExchangeError("temporarily_unavailable", "sign-in is temporarily unavailable; try again", status_code=503)


def _unverified_claims(token: str) -> dict[str, Any]:
    """The claims as the token states them, before any check: only to pick its provider."""
    try:
        claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return {}
    return claims


def client_of(claims: dict[str, Any]) -> str | None:
    """The client an ID token was issued to: its ``azp``, else its one audience (OIDC Core 2)."""
    azp, audience = claims.get("azp"), claims.get("aud")
    if isinstance(azp, str):
        return azp
    if isinstance(audience, str):
        return audience
    if isinstance(audience, list) and len(set(audience)) == 1 and isinstance(audience[0], str):
        return audience[0]
    return None


class TokenExchange:
    """The /auth/token endpoint."""

    def __init__(
        self, services: Services, verifier: IdTokenVerifier | None = None, providers: Providers | None = None
    ) -> None:
        self.services = services
        settings = services.settings
        oidc = settings.oidc
        self.verifier = verifier if verifier is not None else (None if oidc is None else IdTokenVerifier(oidc))
        self.providers = providers if providers is not None else Providers(development=settings.development)
        self.lifetimes = sessions.Lifetimes(
            idle=timedelta(seconds=settings.session_idle_seconds),
            absolute=timedelta(seconds=settings.session_max_seconds),
            reuse_leeway=timedelta(seconds=settings.refresh_reuse_leeway_seconds),
        )
        self.successor_key = successor_key(settings.jwt_secret)

    async def endpoint(self, request: Request) -> JSONResponse:
        """The Starlette endpoint (a bound method, so Starlette passes it a Request)."""
        try:
            return await self._exchange(request)
        except ExchangeError as error:
            return _error_response(error)

    async def _exchange(self, request: Request) -> JSONResponse:
        form = await _form(request)
        grant_type = form.get("grant_type")
        if grant_type is None:
            raise ExchangeError("invalid_request", "grant_type is missing")
        if grant_type == REFRESH_GRANT_TYPE:
            return await self._refresh(form)
        if grant_type != GRANT_TYPE:
            raise ExchangeError("unsupported_grant_type", f"grant_type must be {GRANT_TYPE} or {REFRESH_GRANT_TYPE}")
        subject_token = form.get("subject_token")
        if subject_token is None:
            raise ExchangeError("invalid_request", "subject_token is missing")
        if form.get("subject_token_type") != ID_TOKEN_TYPE:
            raise ExchangeError("invalid_request", f"subject_token_type must be {ID_TOKEN_TYPE}")
        if form.get("requested_token_type", ACCESS_TOKEN_TYPE) != ACCESS_TOKEN_TYPE:
            raise ExchangeError("invalid_request", f"requested_token_type, when given, must be {ACCESS_TOKEN_TYPE}")
        if "actor_token" in form:
            raise ExchangeError("invalid_request", "delegation (actor_token) is not supported")
        try:
            return await self._sign_in(subject_token)
        except Refused as reason:
            log.warning("sign-in refused: %s", reason)
            raise ExchangeError("invalid_grant", REFUSED) from None
        except Unavailable:
            raise _unavailable() from None

    async def _provider_of(self, subject_token: str) -> tuple[IdTokenVerifier, OrgId | None]:
        """The verifier for the token's provider, and the organisation that registered it (None
        for the platform's own provider)."""
        claims = _unverified_claims(subject_token)
        issuer, client = claims.get("iss"), client_of(claims)
        default = self.verifier
        if default is not None and issuer == default.settings.issuer and client in (None, *default.settings.audiences):
            return default, None
        if isinstance(issuer, str) and client is not None:
            table = self.services.datastore.table(SignInScope())
            found = await identity_providers.find_client(table, issuer, client)
            if found is not None:
                return self.providers.verifier(issuer, client), found.org_id
        if default is not None:
            return default, None  # its verification says what is wrong with the token
        log.info("sign-in refused: %s (%r)", NO_PROVIDER, issuer)
        raise ExchangeError("invalid_grant", NO_PROVIDER)

    async def _sign_in(self, subject_token: str) -> JSONResponse:
        verifier, provider_org = await self._provider_of(subject_token)
        try:
            id_token = await self.services.run_blocking(verifier.verify, subject_token)
        except IdTokenRejected as rejected:
            if rejected.hidden:
                raise Refused(str(rejected)) from None
            log.info("sign-in refused: %s", rejected)
            raise ExchangeError("invalid_grant", str(rejected)) from None
        try:
            email = validation.email(id_token.email)
        except InvalidInput as invalid:
            raise Refused(f"the email {id_token.email!r} is not a valid address: it {invalid.reason}") from None
        issuer = verifier.settings.issuer
        datastore = self.services.datastore
        identity = await identities.find_identity(datastore.table(SignInScope()), email)
        if identity is None:
            raise Refused(f"no account has the email {email!r}")
        if provider_org is not None and identity.org_id != provider_org:
            raise Refused(
                f"{email!r} belongs to organisation {identity.org_id}, not to {provider_org} whose provider "
                f"{issuer} issued the ID token"
            )
        tenant = datastore.table(TenantScope(identity.org_id, identity.emp_id))
        organization, employee, own_provider = await identities.sign_in_records(tenant, identity.emp_id)
        active = _require_active(organization, employee, identity.org_id, identity.emp_id, email)
        if provider_org is not None and validation.email_domain(email) not in active.email_domains:
            raise Refused(f"{email!r} is not in a domain of organisation {provider_org}, whose provider issued it")
        if provider_org is None and own_provider is not None:
            raise Refused(
                f"organisation {identity.org_id} signs in through its own provider {own_provider.issuer}, "
                f"not the platform's {issuer}"
            )
        if provider_org is not None and (own_provider is None or own_provider.issuer != issuer):
            raise Refused(f"organisation {provider_org}'s provider {issuer} was removed or replaced meanwhile")
        assert employee is not None  # _require_active checked it
        if employee.email != email:
            raise Refused(f"the identity of {email!r} names employee {employee.emp_id}, whose email differs")
        session, refresh_token = await sessions.start_session(
            tenant, employee.emp_id, self.lifetimes, provider=None if provider_org is None else own_provider
        )
        log.info(
            "signed in: employee %s of organisation %s as %s through %s (session %s)",
            employee.emp_id,
            employee.org_id,
            employee.role,
            issuer,
            session.session_id,
        )
        body = self._tokens(employee, session.session_id, refresh_token, issued_at=session.created_at)
        return JSONResponse({**body, "issued_token_type": ACCESS_TOKEN_TYPE}, headers=NO_STORE)

    def _tokens(
        self, employee: Employee, session_id: SessionId, refresh_token: str, *, issued_at: datetime
    ) -> dict[str, Any]:
        settings = self.services.settings
        ttl = settings.access_token_ttl_seconds
        access_token = issue_token(
            settings,
            subject=employee.emp_id,
            org_id=employee.org_id,
            role=employee.role.value,
            ttl_seconds=ttl,
            session_id=session_id,
            issued_at=int(issued_at.timestamp()),
        )
        return {"access_token": access_token, "token_type": "Bearer", "expires_in": ttl, "refresh_token": refresh_token}

    async def _refresh(self, form: dict[str, str]) -> JSONResponse:
        """RFC 6749 section 6: a new access token and a new refresh token for a current one."""
        token = form.get("refresh_token")
        if token is None:
            raise ExchangeError("invalid_request", "refresh_token is missing")
        try:
            return await self._rotate(token)
        except Refused as reason:
            log.warning("refresh refused: %s", reason)
            raise ExchangeError("invalid_grant", REFRESH_REFUSED) from None
        except Unavailable:
            raise _unavailable() from None

    async def _rotate(self, token: str) -> JSONResponse:
        datastore = self.services.datastore
        grant = await sessions.find_grant(datastore.table(SignInScope()), token)
        if grant is None:
            raise Refused("the refresh token is unknown (or its session expired)")
        tenant = datastore.table(TenantScope(grant.org_id, grant.emp_id))
        organization, employee = await identities.organization_and_employee(tenant, grant.emp_id)
        try:
            _require_active(organization, employee, grant.org_id, grant.emp_id, "")
            assert employee is not None
            rotated = await sessions.rotate(tenant, grant, token, self.lifetimes, successor_key=self.successor_key)
        except Refused:
            await sessions.end_session(tenant, grant.emp_id, grant.session_id, sessions.REFUSED)
            raise
        except sessions.RefreshRefused as refused:
            if refused.reused:
                log.warning(
                    "refresh token reuse: session %s of employee %s ended, every refresh token of it refused",
                    grant.session_id,
                    grant.emp_id,
                )
            raise Refused(f"session {grant.session_id} of employee {grant.emp_id}: {refused}") from None
        if rotated.replayed:
            log.info(
                "refresh raced: session %s of employee %s, token %d answered again with token %d, within the "
                "reuse leeway of its rotation",
                grant.session_id,
                grant.emp_id,
                grant.generation,
                rotated.grant.generation,
            )
        else:
            log.info(
                "refreshed: session %s of employee %s (token %d)",
                grant.session_id,
                grant.emp_id,
                rotated.grant.generation,
            )
        body = self._tokens(employee, grant.session_id, rotated.token, issued_at=rotated.at)
        return JSONResponse(body, headers=NO_STORE)


def successor_key(jwt_secret: str) -> bytes:
    """The key a rotation derives the next refresh token under (datastore/signin/sessions.py
    ``successor``): the server's secret, every process's alike, never used as is for another
    purpose than its own."""
    return hmac.new(jwt_secret.encode("utf-8"), b"hr refresh-token successor", hashlib.sha256).digest()


def _require_active(
    organization: Organization | None, employee: Employee | None, org_id: OrgId, emp_id: str, email: str
) -> Organization:
    named = f" ({email!r})" if email else ""
    if organization is None or organization.status is not OrganizationStatus.ACTIVE:
        raise Refused(f"the organisation {org_id} of {email or 'employee ' + emp_id!r} is not active")
    if employee is None or employee.status is not EmployeeStatus.ACTIVE:
        raise Refused(f"the employee {emp_id}{named} is not active")
    return organization


async def _form(request: Request) -> dict[str, str]:
    """The form parameters; blank ones count as omitted (RFC 6749 3.2), repeated ones are refused."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != FORM:
        raise ExchangeError("invalid_request", f"the body must be {FORM}")
    try:
        text = (await request.body()).decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise ExchangeError("invalid_request", "the body is not a valid form") from None
    form: dict[str, str] = {}
    seen: set[str] = set()
    for name, value in pairs:
        if name in seen:
            raise ExchangeError("invalid_request", f"{name} is repeated")
        seen.add(name)
        if value:
            form[name] = value
    return form
