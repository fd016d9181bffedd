"""OpenID providers found through their discovery documents: endpoints, keys, verifiers.

An organisation's provider is registered by its issuer alone; everything else comes from
``<issuer>/.well-known/openid-configuration`` (OpenID Connect Discovery 1.0): the
endpoints a browser app is sent to (``GET /auth/discovery``), and ``jwks_uri``, where the
provider's signing keys are. The document must name the very issuer it was fetched for
(section 4.3), and every URL in it is held to the same rules as the issuer's.

Keys are cached per issuer like the platform provider's (``jwks.JwksKeys``): a token signed
with a key the cache does not know refetches the discovery document and then the key set,
at most once per 30 s per issuer, so a provider's key rotation is followed and tokens with
random ``kid`` values cannot make the server hammer anyone. Every fetch goes through
``outbound.fetch_json`` (https, a public address outside development, bounded time and size).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from graphql_api.auth.jwks import JwksKeys
from graphql_api.auth.oidc import IdTokenVerifier
from graphql_api.auth.outbound import FetchRefused, check_url, fetch_json
from graphql_api.lru import Lru
from graphql_api.settings.api import OidcSettings

WELL_KNOWN: Final = "/.well-known/openid-configuration"
# Issuers whose keys a process keeps (least recently used forgotten first).
MAX_ISSUERS: Final = 1_000
# How long the platform provider's endpoints are kept before they are read again.
DEFAULT_DOCUMENT_SECONDS: Final = 3600.0
# A failed read of them is not retried sooner than this.
RETRY_SECONDS: Final = 30.0

Fetch = Callable[[str], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ProviderDocument:
    """What sign-in needs of a provider's discovery document."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


def check_issuer(issuer: str, *, development: bool) -> str:
    """``issuer`` when it may be registered: an https URL (http too in development) with a host
    and no query, fragment or credentials (OpenID Connect Core 2); FetchRefused says why not."""
    check_url(issuer, allow_http=development)
    parts = urlsplit(issuer)
    if parts.query or parts.fragment or "?" in issuer or "#" in issuer:
        raise FetchRefused(f"{issuer!r} must have no query or fragment (OpenID Connect Core 2)")
    return issuer


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + WELL_KNOWN


def read_document(issuer: str, fetch: Fetch, *, allow_http: bool) -> ProviderDocument:
    """The issuer's discovery document, checked; FetchRefused when it cannot be read or is wrong."""
    document = fetch(discovery_url(issuer))
    if document.get("issuer") != issuer:
        raise FetchRefused(
            f"the discovery document at {discovery_url(issuer)} names the issuer {document.get('issuer')!r}, "
            f"not {issuer!r} (OpenID Connect Discovery 4.3)"
        )
    found: dict[str, str] = {}
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        value = document.get(name)
        if not isinstance(value, str):
            raise FetchRefused(f"the discovery document at {discovery_url(issuer)} has no {name}")
        check_url(value, allow_http=allow_http)
        found[name] = value
    return ProviderDocument(issuer, found["authorization_endpoint"], found["token_endpoint"], found["jwks_uri"])


class Providers:
    """Organisations' providers, as this process knows them: discovery and key sets per issuer.

    ``development`` admits http URLs and addresses that are not public (a provider on the
    loopback); nowhere else.
    """

    def __init__(self, *, development: bool, fetch: Fetch | None = None, max_issuers: int = MAX_ISSUERS) -> None:
        self.development = development
        self._fetch: Fetch = fetch or (lambda url: fetch_json(url, allow_private=development))
        # Read on the event loop's thread only (``verifier``); the key sets lock themselves.
        self._keys: Lru[str, JwksKeys] = Lru(max_issuers)

    def document(self, issuer: str) -> ProviderDocument:
        """The issuer's discovery document, read now. Blocking."""
        return read_document(issuer, self._fetch, allow_http=self.development)

    def _jwks(self, issuer: str) -> dict[str, Any]:
        return self._fetch(self.document(issuer).jwks_uri)

    def verifier(self, issuer: str, client_id: str) -> IdTokenVerifier:
        """A verifier of ID tokens the issuer made for ``client_id``, on the issuer's cached keys."""
        keys = self._keys.get(issuer)
        if keys is None:
            keys = JwksKeys(discovery_url(issuer), fetch=lambda: self._jwks(issuer))
            self._keys.put(issuer, keys)
        return IdTokenVerifier(OidcSettings(issuer=issuer, audiences=(client_id,), jwks=keys.location), keys)


class DefaultEndpoints:
    """The platform provider's endpoints (``OIDC_ISSUER``'s discovery document), kept an hour.

    The operator configured that issuer, so its document is fetched like its JWKS is (on the
    loopback too); only ``GET /auth/discovery`` needs them.
    """

    def __init__(
        self, settings: OidcSettings, fetch: Fetch | None = None, *, clock: Callable[[], float] = time.monotonic
    ):
        self.settings = settings
        self._fetch: Fetch = fetch or (lambda url: fetch_json(url, allow_private=True))
        self._clock = clock
        self._lock = threading.Lock()
        self._document: ProviderDocument | None = None
        self._read_at = float("-inf")
        self._failed_at = float("-inf")

    def document(self) -> ProviderDocument:
        """Blocking on a due read; FetchRefused when it fails (and for RETRY_SECONDS after)."""
        with self._lock:
            now = self._clock()
            if self._document is not None and now - self._read_at < DEFAULT_DOCUMENT_SECONDS:
                return self._document
            if now - self._failed_at < RETRY_SECONDS:
                if self._document is not None:
                    return self._document
                raise FetchRefused("the platform provider's discovery document is unavailable")
            try:
                self._document = read_document(self.settings.issuer, self._fetch, allow_http=True)
            except FetchRefused:
                self._failed_at = now
                if self._document is not None:
                    return self._document  # stale beats none
                raise
            self._read_at = now
            return self._document
