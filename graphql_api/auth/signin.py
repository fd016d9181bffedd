"""POST /auth/token: sign-in by SSO, an OAuth 2.0 Token Exchange (RFC 8693).

A browser app sends the ID token its identity provider gave it; we verify it (graphql_api/
oidc.py), find the person by email (AP4: one GetItem on the identity item), read their
organisation and employee record together (one BatchGetItem), and answer with the API's own
short-lived access token. The role is the employee record's, never the provider's.

Errors follow RFC 6749 section 5.2. Every reason that is about the account (unknown email,
unverified email, suspended organisation, inactive employee) gets one and the same
``invalid_grant`` body, so the endpoint cannot tell anyone who has an account; the server
logs the real reason in one line.
"""

from __future__ import annotations

import logging
from typing import Final
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse

from datastore import identities, validation
from datastore.entities import EmployeeStatus, OrganizationStatus
from datastore.errors import InvalidInput, Unavailable
from datastore.scope import SignInScope, TenantScope
from graphql_api.auth.oidc import IdTokenRejected, IdTokenVerifier
from graphql_api.auth.tokens import issue_token
from graphql_api.request.context import Services

log = logging.getLogger("hr.signin")


GRANT_TYPE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id_token"
ACCESS_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:access_token"
FORM: Final = "application/x-www-form-urlencoded"
# RFC 6749 5.1: token responses must not be cached.
NO_STORE: Final = {"Cache-Control": "no-store", "Pragma": "no-cache"}
# The one answer for every account reason (see the module docstring).
REFUSED: Final = "the subject token does not identify an active account"
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
    """An account reason: logged as is, answered with REFUSED."""


def _error_response(error: ExchangeError) -> JSONResponse:
    body = {"error": error.error, "error_description": error.description}
    return JSONResponse(body, status_code=error.status_code, headers=NO_STORE)


class TokenExchange:
    """The /auth/token endpoint."""

    def __init__(self, services: Services, verifier: IdTokenVerifier | None = None) -> None:
        self.services = services
        oidc = services.settings.oidc
        self.verifier = verifier if verifier is not None else (None if oidc is None else IdTokenVerifier(oidc))

    async def endpoint(self, request: Request) -> JSONResponse:
        """The Starlette endpoint (a bound method, so Starlette passes it a Request)."""
        try:
            return await self._exchange(request)
        except ExchangeError as error:
            return _error_response(error)

    async def _exchange(self, request: Request) -> JSONResponse:
        if self.verifier is None:
            raise ExchangeError(
                "unsupported_grant_type",
                "sign-in by SSO is not configured on this server (OIDC_ISSUER, OIDC_AUDIENCE, OIDC_JWKS)",
            )
        form = await _form(request)
        grant_type = form.get("grant_type")
        if grant_type is None:
            raise ExchangeError("invalid_request", "grant_type is missing")
        if grant_type != GRANT_TYPE:
            raise ExchangeError("unsupported_grant_type", f"grant_type must be {GRANT_TYPE}")
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
            return await self._sign_in(self.verifier, subject_token)
        except Refused as reason:
            log.warning("sign-in refused: %s", reason)
            raise ExchangeError("invalid_grant", REFUSED) from None

    async def _sign_in(self, verifier: IdTokenVerifier, subject_token: str) -> JSONResponse:
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
        datastore = self.services.datastore
        try:
            identity = await self.services.run_blocking(identities.find_identity, datastore.table(SignInScope()), email)
            if identity is None:
                raise Refused(f"no account has the email {email!r}")
            tenant = datastore.table(TenantScope(identity.org_id, identity.emp_id))
            organization, employee = await self.services.run_blocking(
                identities.organization_and_employee, tenant, identity.emp_id
            )
        except Unavailable:
            log.warning("sign-in failed: DynamoDB is unavailable")
            raise ExchangeError(
                "temporarily_unavailable", "sign-in is temporarily unavailable; try again", status_code=503
            ) from None
        if organization is None or organization.status is not OrganizationStatus.ACTIVE:
            raise Refused(f"the organisation {identity.org_id} of {email!r} is not active")
        if employee is None or employee.status is not EmployeeStatus.ACTIVE:
            raise Refused(f"the employee {identity.emp_id} ({email!r}) is not active")
        if employee.email != email:
            raise Refused(f"the identity of {email!r} names employee {employee.emp_id}, whose email differs")
        settings = self.services.settings
        ttl = settings.access_token_ttl_seconds
        access_token = issue_token(
            settings, subject=employee.emp_id, org_id=employee.org_id, role=employee.role.value, ttl_seconds=ttl
        )
        log.info("signed in: employee %s of organisation %s as %s", employee.emp_id, employee.org_id, employee.role)
        body = {
            "access_token": access_token,
            "issued_token_type": ACCESS_TOKEN_TYPE,
            "token_type": "Bearer",
            "expires_in": ttl,
        }
        return JSONResponse(body, headers=NO_STORE)


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
