"""A JWKS's signing keys, and the checks every token signed by one of them gets.

Two kinds of token are verified against a JWKS: the API's bearer tokens (auth.TokenVerifier,
when JWKS is set) and an identity provider's ID tokens at sign-in (oidc.IdTokenVerifier).
Both find their key here (RS256 or ES256 only, by ``kid``, for the token's own algorithm)
and require numeric time claims here; each turns a failure (a ``jwt.PyJWTError``; ours are
token_errors.TokenRefused, worded for the client) into its own error. Finding a key may
refetch the JWKS: callers run it off the loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet

from graphql_api.auth.token_errors import TokenRefused

log = logging.getLogger("hr.auth")

# HS256 is only ever checked against the shared secret (auth.py), never a JWKS key, so a
# public key can never be used as an HMAC secret (algorithm confusion).
ASYMMETRIC_ALGORITHMS: Final = ("RS256", "ES256")
# An unknown ``kid`` refetches the JWKS at most this often.
JWKS_MIN_REFRESH_SECONDS: Final = 30.0
# A JWKS fetch that takes longer fails (and is retried after the throttle).
JWKS_FETCH_TIMEOUT_SECONDS: Final = 10.0
# RFC 7519 4.1.4-4.1.6: NumericDate values. PyJWT also takes numeric strings ("exp": "1e9").
TIME_CLAIMS: Final = ("exp", "nbf", "iat")


class JwksKeys:
    """The signing keys of a JWKS (a file path or an http(s) URL), cached.

    A ``kid`` not in the cached set refetches the set, at most once per
    ``min_refresh_seconds``, so tokens with random kids cannot hammer the identity provider.
    """

    def __init__(
        self,
        location: str,
        *,
        min_refresh_seconds: float = JWKS_MIN_REFRESH_SECONDS,
        fetch: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.location = location
        # Fetches the set as a JSON object instead, when given: an organisation's provider,
        # whose keys are found through its discovery document (graphql_api/auth/discovery.py).
        self._fetch_document = fetch
        self._min_refresh = min_refresh_seconds
        self._lock = threading.Lock()
        self._keys: dict[str, PyJWK] = {}
        self._fetched_at = float("-inf")

    def _fetch(self) -> dict[str, PyJWK]:
        if self._fetch_document is not None:
            jwk_set = PyJWKSet.from_dict(self._fetch_document())
        elif self.location.startswith(("https://", "http://")):
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


def signing_key(keys: JwksKeys, header: dict[str, Any]) -> tuple[str, Any]:
    """The algorithm and public key that verify a token with ``header`` (its JOSE header).

    Blocking (a due refetch). Raises a TokenRefused saying why no key fits: an
    algorithm other than RS256/ES256, no ``kid``, keys that cannot be fetched or read, an
    unknown ``kid``, or a key for another algorithm.
    """
    algorithm = header.get("alg")
    if not isinstance(algorithm, str) or algorithm not in ASYMMETRIC_ALGORITHMS:
        raise TokenRefused(f"its algorithm {algorithm!r} is not accepted")
    kid = header.get("kid")
    if not isinstance(kid, str):
        raise TokenRefused("its header names no key (kid)")
    try:
        jwk = keys.lookup(kid)
    except (OSError, ValueError, jwt.PyJWTError) as error:  # unreachable, unreadable, not JSON, no keys
        # The cause (a path, a URL, a parser's message) is the operator's to read, not the caller's.
        log.warning("the signing keys at %s are unavailable: %s", keys.location, error)
        raise TokenRefused("the signing keys are unavailable") from None
    if jwk is None:
        raise TokenRefused(f"its signing key {kid!r} is unknown")
    if jwk.algorithm_name != algorithm:
        raise TokenRefused(f"its key {kid!r} does not sign with {algorithm}")
    return algorithm, jwk.key


def require_numeric_times(claims: dict[str, Any]) -> None:
    """Each time claim present is a JSON number (PyJWT has checked its value, not its type)."""
    for name in TIME_CLAIMS:
        value = claims.get(name)
        if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise TokenRefused(f"its {name} claim is not a number")
