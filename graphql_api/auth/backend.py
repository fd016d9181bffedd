"""Authentication in one place: a Starlette backend that turns a bearer credential into the caller.

The credential is a JWT, or an API key (``hrk_...``, told apart by its prefix before any
cryptography; graphql_api/auth/api_keys.py). It runs as middleware before any route, for HTTP
and WebSocket connections alike: a request without a token goes on anonymous, a request with
a bad one is refused with 401 (a GraphQL error body, ``extensions.code`` UNAUTHENTICATED and
``extensions.reason``, TOKEN_EXPIRED or TOKEN_INVALID; 503 UNAVAILABLE when a key's lookup
cannot be read), and a good one carries its Principal in
``request.user`` and its role in ``request.auth.scopes``. Views only read the result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import jwt
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, BaseUser
from starlette.requests import HTTPConnection
from starlette.responses import Response

from datastore.errors import DatastoreError
from datastore.signin import api_keys
from graphql_api.auth.api_keys import ApiKeyAuthenticator
from graphql_api.auth.tokens import ALGORITHM, TokenVerifier, bearer_token
from graphql_api.execution.errors import ApiError, AuthReason, translate, unauthenticated
from graphql_api.observability.refusals import ErrorResponse
from graphql_api.request.principal import Principal, PrincipalUser


class CredentialRefused(AuthenticationError):
    """A credential that is not (or no longer) good: 401, with the error's code and reason."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(str(error))
        self.error = error


class CredentialUnavailable(AuthenticationError):
    """A credential could not be checked (the key's lookup failed): 503, not 401."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(str(error))
        self.error = error


class BearerTokenBackend(AuthenticationBackend):
    def __init__(
        self,
        verifier: TokenVerifier,
        run_blocking: Callable[[Callable[[str], Principal], str], Awaitable[Principal]],
        keys: ApiKeyAuthenticator | None = None,
    ) -> None:
        self.verifier = verifier
        # The process's runner of blocking work (request/blocking.py), for tokens checked
        # against the JWKS (a file or HTTP fetch, no DynamoDB call).
        self.run_blocking = run_blocking
        self.keys = keys

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        principal = await self.principal_for(conn.headers.get("authorization"))
        if principal is None:
            return None
        scopes = ["authenticated", "platform" if principal.role is None else principal.role.value]
        return AuthCredentials(scopes), PrincipalUser(principal)

    async def principal_for(self, authorization: str | None) -> Principal | None:
        """The caller an ``Authorization`` value names; None without one.

        AuthenticationError for a bad credential, CredentialUnavailable when it could not be
        checked. A WebSocket's ``connection_init`` payload is checked here too, as its header
        would be (graphql_api/subscriptions/websocket.py): a browser cannot set the header.
        """
        try:
            token = bearer_token(authorization)
            if token is None:
                return None
            if api_keys.is_api_key(token):
                if self.keys is None:
                    raise unauthenticated("API keys are not accepted here", AuthReason.TOKEN_INVALID)
                return await self.keys.authenticate(token)
            return await self._verify(token)
        except ApiError as error:
            raise CredentialRefused(error) from None
        except DatastoreError as error:
            translated = translate(error)
            if translated is None:
                raise
            raise CredentialUnavailable(translated) from None

    async def _verify(self, token: str) -> Principal:
        # An asymmetric token may refetch the JWKS (file or HTTP): keep that off the loop. A
        # token the verifier remembers is one of ours (HS256), with no header to parse again.
        verifier = self.verifier
        if verifier.jwks is None or token in verifier.verified or _algorithm(token) == ALGORITHM:
            return verifier.verify(token)
        return await self.run_blocking(verifier.verify, token)


def _algorithm(token: str) -> object:
    try:
        return jwt.get_unverified_header(token).get("alg")
    except jwt.PyJWTError:
        return None  # verify() gives the precise error


def on_auth_error(conn: HTTPConnection, error: AuthenticationError) -> Response:
    """The refusal of a bad token: HTTP 401, a GraphQL error body, and the Bearer challenge.

    The body's ``extensions.reason`` tells an expired token (TOKEN_EXPIRED: refresh) from one
    that is no good (TOKEN_INVALID: sign in again).
    """
    if isinstance(error, CredentialUnavailable):
        return ErrorResponse(503, error.error)
    if isinstance(error, CredentialRefused):
        refused = error.error
    else:
        refused = unauthenticated(str(error), AuthReason.TOKEN_INVALID)
    return ErrorResponse(401, refused, [(b"www-authenticate", b"Bearer")])
