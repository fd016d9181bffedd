"""Verifying an identity provider's OIDC ID token, the subject of a sign-in exchange.

The token must be signed (RS256 or ES256) by a key of the provider's JWKS (jwks.py), name the
configured issuer, be addressed to one of our client ids (and, with several audiences, name
one of them as its authorised party, ``azp``), be within its time window (with numeric time
claims), and carry a verified email. Verification is blocking (an unknown ``kid`` may
refetch the JWKS): callers run it off the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import jwt

from graphql_api.auth.jwks import JwksKeys, require_numeric_times, signing_key
from graphql_api.auth.token_errors import reason_of
from graphql_api.settings.api import OidcSettings

# Clock skew tolerated between the identity provider and us, for exp, iat and nbf.
LEEWAY_SECONDS: Final = 30


class IdTokenRejected(Exception):
    """The ID token cannot sign anyone in; the message says why.

    ``hidden`` marks reasons about the account rather than the token (an unverified email):
    the client gets the same answer as for an unknown account, and only the log says more.
    """

    def __init__(self, reason: str, *, hidden: bool = False) -> None:
        super().__init__(reason)
        self.hidden = hidden


@dataclass(frozen=True, slots=True)
class IdToken:
    """The verified claims sign-in uses: the provider's subject and the person's email."""

    subject: str
    email: str


class IdTokenVerifier:
    def __init__(self, settings: OidcSettings, keys: JwksKeys | None = None) -> None:
        self.settings = settings
        self.keys = keys if keys is not None else JwksKeys(settings.jwks)

    def verify(self, token: str) -> IdToken:
        """The token's verified identity, or IdTokenRejected. Blocking."""
        try:
            claims = self._decode(token)
        except jwt.PyJWTError as error:
            raise IdTokenRejected(f"the ID token is not valid: {reason_of(error)}") from None
        self._check_authorized_party(claims)
        subject, email = claims.get("sub"), claims.get("email")
        if not isinstance(subject, str):
            raise IdTokenRejected("the ID token is not valid: its sub claim is not a string")
        if email is None:
            raise IdTokenRejected("the ID token has no email claim: ask the identity provider for the email scope")
        if not isinstance(email, str):
            raise IdTokenRejected("the ID token is not valid: its email claim is not a string")
        if claims.get("email_verified") is not True:
            raise IdTokenRejected(f"the email {email!r} is not verified by the identity provider", hidden=True)
        return IdToken(subject, email)

    def _check_authorized_party(self, claims: dict[str, Any]) -> None:
        """OIDC Core 3.1.3.7, items 4 and 5: ``azp`` names one of our client ids when present,
        and must be present when the token has several audiences.

        ``aud`` has passed (it names one of ours); with other audiences beside it only
        ``azp`` says which client the token was issued to. A single audience (a string, or a
        list of one, repeated or not) needs no ``azp``.
        """
        audience = claims["aud"]
        several = isinstance(audience, list) and len(set(audience)) > 1
        azp = claims.get("azp")
        if azp is None:
            if several:
                raise IdTokenRejected("the ID token is not valid: it has several audiences and no azp")
            return
        if azp not in self.settings.audiences:
            raise IdTokenRejected("the ID token is not valid: azp is not an accepted client")

    def _decode(self, token: str) -> dict[str, Any]:
        algorithm, key = signing_key(self.keys, jwt.get_unverified_header(token))
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[algorithm],
            issuer=self.settings.issuer,
            audience=list(self.settings.audiences),
            leeway=LEEWAY_SECONDS,
            options={"require": ["iss", "aud", "exp", "iat", "sub"], "verify_nbf": True, "verify_iat": True},
        )
        require_numeric_times(claims)
        return claims
