"""Bearer tokens: who is calling, for which organisation, in which role."""

from __future__ import annotations

import time
from typing import Any

import jwt

from datastore.kinds.entities import Role
from datastore.values import ids
from datastore.values.ids import EmployeeId, OrgId, SessionId
from graphql_api.auth.jwks import JwksKeys, require_numeric_times, signing_key
from graphql_api.auth.token_errors import TokenRefused, reason_of
from graphql_api.execution.errors import ApiError, AuthReason, unauthenticated
from graphql_api.lru import Lru
from graphql_api.request.principal import Principal
from graphql_api.settings.api import ApiSettings

ALGORITHM = "HS256"
# How many HS256 tokens a verifier remembers as verified (a few hundred bytes each).
VERIFIED_TOKENS = 1024


PLATFORM_ROLE = "platform"


def issue_token(
    settings: ApiSettings,
    *,
    subject: str,
    org_id: str | None,
    role: str,
    ttl_seconds: int | None = None,
    session_id: str | None = None,
    issued_at: int | None = None,
) -> str:
    """An HS256 access token. ``issued_at`` (epoch seconds, now unless told) sets ``iat``, ``nbf``
    and ``exp``: the same claims give the same token, which a refresh answered twice relies on."""
    now = int(time.time()) if issued_at is None else issued_at
    claims: dict[str, object] = {
        "sub": subject,
        "role": role,
        "iat": now,
        "nbf": now,
        "exp": now + (ttl_seconds or settings.token_ttl_seconds),
    }
    if org_id is not None:
        claims["org"] = org_id
    if session_id is not None:
        claims["sid"] = session_id
    if settings.jwt_issuer:
        claims["iss"] = settings.jwt_issuer
    if settings.jwt_audience:
        claims["aud"] = settings.jwt_audience
    return jwt.encode(claims, settings.jwt_secret, algorithm=ALGORITHM)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when absent."""
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthenticated("the Authorization header must be 'Bearer <token>'", AuthReason.TOKEN_INVALID)
    return token.strip()


class TokenVerifier:
    """Checks signature, issuer, audience, expiry and not-before; returns the caller.

    Every refusal is UNAUTHENTICATED with a reason (execution/errors.py AuthReason):
    TOKEN_EXPIRED only for a token that passes every other check (so a client refreshes a
    token of ours that ran out, never a forged one), TOKEN_INVALID for the rest, each with our
    own wording (token_errors.py).
    """

    def __init__(self, settings: ApiSettings, jwks: JwksKeys | None = None) -> None:
        self.settings = settings
        self.jwks = jwks if jwks is not None else (JwksKeys(settings.jwks) if settings.jwks else None)
        # HS256 tokens already verified, by their exact text: the caller and the first second
        # past the token's ``exp`` (an integer, as PyJWT compares it). A client sends the same
        # token with every request, and verifying it (two full parses, base64, the HMAC) cost
        # about 45 us of the event loop's time per request. Everything but the expiry depends
        # only on the token's bytes and this process's settings (the secret, issuer, audience),
        # and ``nbf`` and ``iat``, once passed, stay passed: so only the expiry is checked
        # again, and a token past it is verified in full (its TOKEN_EXPIRED comes from there).
        # Only HS256 tokens, which are always verified on the event loop's thread (auth/backend.py):
        # a JWKS token is verified on the blocking pool and may be signed by a key the JWKS drops.
        # The map is the loop's (graphql_api/lru.py takes no lock): a JWKS token's verification
        # on the pool only looks itself up, finds nothing and changes nothing.
        # Whether the caller is still active is the request's own check (auth/active.py).
        self.verified: Lru[str, tuple[Principal, int]] = Lru(VERIFIED_TOKENS)

    def verify(self, token: str) -> Principal:
        """The caller, or UNAUTHENTICATED. Blocking when the token is verified against the JWKS."""
        known = self.verified.get(token)
        if known is not None and time.time() < known[1]:
            return known[0]
        try:
            claims, algorithm = self._claims(token, verify_exp=True)
        except jwt.ExpiredSignatureError:
            # Expired, and nothing else checked yet after it (PyJWT checks exp before iss and
            # aud): it is TOKEN_EXPIRED only if it passes everything else.
            self._verify_all_but_expiry(token)
            raise unauthenticated("the token has expired: get a new one", AuthReason.TOKEN_EXPIRED) from None
        except jwt.PyJWTError as error:
            raise invalid_token(reason_of(error)) from None
        principal = principal_from_claims(claims)
        if algorithm == ALGORITHM:
            self.verified.put(token, (principal, int(claims["exp"])))
        return principal

    def _verify_all_but_expiry(self, token: str) -> None:
        try:
            claims, _algorithm = self._claims(token, verify_exp=False)
        except jwt.PyJWTError as error:
            raise invalid_token(reason_of(error)) from None
        principal_from_claims(claims)

    def _claims(self, token: str, *, verify_exp: bool) -> tuple[dict[str, Any], str]:
        """The verified token's claims, and the algorithm it was verified with."""
        header = jwt.get_unverified_header(token)
        key: Any
        if header.get("alg") == ALGORITHM:
            algorithm, key = ALGORITHM, self.settings.jwt_secret
        elif self.jwks is not None:
            algorithm, key = signing_key(self.jwks, header)
        else:
            raise TokenRefused(f"its algorithm {header.get('alg')!r} is not accepted")
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[algorithm],
            issuer=self.settings.jwt_issuer,
            audience=self.settings.jwt_audience,
            options={"require": ["exp", "sub", "role"], "verify_nbf": True, "verify_exp": verify_exp},
        )
        require_numeric_times(claims)
        return claims, algorithm


def invalid_token(reason: str) -> ApiError:
    """UNAUTHENTICATED for a token that is not (or no longer) one of ours: ``reason`` says why."""
    return unauthenticated(f"invalid token: {reason}", AuthReason.TOKEN_INVALID)


def principal_from_claims(claims: dict[str, object]) -> Principal:
    subject, org, role = claims.get("sub"), claims.get("org"), claims.get("role")
    if not isinstance(subject, str):
        raise invalid_token("its sub claim is not a string")
    if not isinstance(role, str):
        raise invalid_token("its role claim is not a string")
    expiry = claims.get("exp")
    expires_at = float(expiry) if isinstance(expiry, int | float) else None
    if role == PLATFORM_ROLE:
        if org is not None:
            raise invalid_token("a platform token has no org claim")
        return Principal(subject, None, None, expires_at=expires_at)
    if not isinstance(org, str):
        raise invalid_token("it has no org claim")
    org_id = ids.parse(OrgId, org)
    if org_id is None:
        raise invalid_token(f"its org claim {ids.NOT_A_ULID}")
    emp_id = ids.parse(EmployeeId, subject)
    if emp_id is None:
        raise invalid_token(f"its sub claim {ids.NOT_A_ULID}")
    sid = claims.get("sid")
    session_id = None if sid is None else ids.parse(SessionId, sid)
    if sid is not None and session_id is None:
        raise invalid_token(f"its sid claim {ids.NOT_A_ULID}")
    try:
        return Principal(emp_id, org_id, Role(role), session_id=session_id, expires_at=expires_at)
    except ValueError:
        raise invalid_token(f"its role {role!r} is not a role") from None
