"""Bearer tokens: who is calling, for which organisation, in which role."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet

from datastore import keys
from datastore.entities import Role
from datastore.errors import InvalidInput
from graphql_api.config import ApiSettings
from graphql_api.errors import unauthenticated

ALGORITHM = "HS256"
# Verified against the configured JWKS; HS256 only ever against the shared secret, so a
# public key can never be used as an HMAC secret (algorithm confusion).
ASYMMETRIC_ALGORITHMS: Final = ("RS256", "ES256")
# An unknown ``kid`` refetches the JWKS at most this often.
JWKS_MIN_REFRESH_SECONDS: Final = 30.0
# A JWKS fetch that takes longer fails (and is retried after the throttle).
JWKS_FETCH_TIMEOUT_SECONDS: Final = 10.0


PLATFORM_ROLE = "platform"
# RFC 7519 4.1.4-4.1.6: NumericDate values. PyJWT also takes numeric strings ("exp": "1e9").
TIME_CLAIMS: Final = ("exp", "nbf", "iat")


@dataclass(frozen=True, slots=True)
class Principal:
    """A verified caller: an employee of one organisation, an API key of one, or a platform operator.

    For an API key (``api_key``) the subject is the key's id: no employee stands behind it.
    """

    subject: str
    org_id: str | None
    role: Role | None
    api_key: bool = False

    @property
    def is_platform(self) -> bool:
        return self.org_id is None


def issue_token(
    settings: ApiSettings, *, subject: str, org_id: str | None, role: str, ttl_seconds: int | None = None
) -> str:
    now = int(time.time())
    claims: dict[str, object] = {
        "sub": subject,
        "role": role,
        "iat": now,
        "nbf": now,
        "exp": now + (ttl_seconds or settings.token_ttl_seconds),
    }
    if org_id is not None:
        claims["org"] = org_id
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
        raise unauthenticated("the Authorization header must be 'Bearer <token>'")
    return token.strip()


class JwksKeys:
    """The signing keys of a JWKS (a file path or an http(s) URL), cached.

    A ``kid`` not in the cached set refetches the set, at most once per
    ``min_refresh_seconds``, so tokens with random kids cannot hammer the identity provider.
    """

    def __init__(self, location: str, *, min_refresh_seconds: float = JWKS_MIN_REFRESH_SECONDS) -> None:
        self.location = location
        self._min_refresh = min_refresh_seconds
        self._lock = threading.Lock()
        self._keys: dict[str, PyJWK] = {}
        self._fetched_at = float("-inf")

    def _fetch(self) -> dict[str, PyJWK]:
        if self.location.startswith(("https://", "http://")):
            client = PyJWKClient(self.location, cache_jwk_set=False, timeout=JWKS_FETCH_TIMEOUT_SECONDS)
            jwk_set = client.get_jwk_set()
        else:
            jwk_set = PyJWKSet.from_json(Path(self.location).read_text())
        return {key.key_id: key for key in jwk_set.keys if key.key_id is not None}

    def lookup(self, kid: str) -> PyJWK | None:
        """The key ``kid`` names, refetching the set (throttled) when it is unknown.

        Blocking (a file read or an HTTP fetch): call it off the event loop. Raises OSError
        or PyJWTError when a due refetch fails; a failed fetch counts for the throttle too,
        so an identity provider that is down is not asked again on every request.
        """
        found = self._keys.get(kid)
        if found is not None:
            return found
        with self._lock:  # one refetch at a time; the others then find the new set
            found = self._keys.get(kid)
            if found is None and time.monotonic() - self._fetched_at >= self._min_refresh:
                self._fetched_at = time.monotonic()
                self._keys = self._fetch()
                found = self._keys.get(kid)
        return found

    def key(self, kid: str) -> PyJWK:
        try:
            found = self.lookup(kid)
        except (OSError, jwt.PyJWTError) as error:
            raise unauthenticated(f"invalid token: the signing keys are unavailable ({error})") from None
        if found is None:
            raise unauthenticated("invalid token: unknown signing key")
        return found


class TokenVerifier:
    """Checks signature, issuer, audience, expiry and not-before; returns the caller."""

    def __init__(self, settings: ApiSettings, jwks: JwksKeys | None = None) -> None:
        self.settings = settings
        self.jwks = jwks if jwks is not None else (JwksKeys(settings.jwks) if settings.jwks else None)

    def verify(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
            algorithm = header.get("alg")
            key: object
            if algorithm == ALGORITHM:
                key = self.settings.jwt_secret
            elif algorithm in ASYMMETRIC_ALGORITHMS and self.jwks is not None:
                kid = header.get("kid")
                if not isinstance(kid, str):
                    raise unauthenticated("invalid token: no key id")
                jwk = self.jwks.key(kid)
                if jwk.algorithm_name != algorithm:
                    raise unauthenticated("invalid token: the key does not sign with this algorithm")
                key = jwk.key
            else:
                raise unauthenticated(f"invalid token: algorithm {algorithm!r} is not accepted")
            claims = jwt.decode(
                token,
                key,  # type: ignore[arg-type]  # a secret or a cryptography public key
                algorithms=[algorithm],
                issuer=self.settings.jwt_issuer,
                audience=self.settings.jwt_audience,
                options={"require": ["exp", "sub", "role"], "verify_nbf": True},
            )
        except jwt.PyJWTError as error:
            raise unauthenticated(f"invalid token: {error}") from None
        require_numeric_times(claims)
        return principal_from_claims(claims)


def require_numeric_times(claims: dict[str, object]) -> None:
    """Each time claim present is a JSON number (PyJWT has checked its value, not its type)."""
    for name in TIME_CLAIMS:
        value = claims.get(name)
        if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise unauthenticated(f"invalid token: the {name} claim must be a number")


def verify(settings: ApiSettings, token: str) -> Principal:
    """The caller a token names, or UNAUTHENTICATED (HS256 and, if configured, the JWKS)."""
    return TokenVerifier(settings).verify(token)


def principal_from_claims(claims: dict[str, object]) -> Principal:
    subject, org, role = claims.get("sub"), claims.get("org"), claims.get("role")
    if not isinstance(subject, str) or not isinstance(role, str):
        raise unauthenticated("invalid token: sub and role must be strings")
    if role == PLATFORM_ROLE:
        if org is not None:
            raise unauthenticated("invalid token: a platform token has no org")
        return Principal(subject, None, None)
    try:
        if not isinstance(org, str):
            raise InvalidInput("org", "is missing")
        org_id = keys.parse_ulid(org, "org")
        emp_id = keys.parse_ulid(subject, "sub")
        return Principal(emp_id, org_id, Role(role))
    except (InvalidInput, ValueError) as error:
        raise unauthenticated(f"invalid token: {error}") from None
