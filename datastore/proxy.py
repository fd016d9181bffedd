"""Which HTTP proxy a connection to DynamoDB goes through, read from the standard variables.

A deployment that reaches AWS only through a proxy says so the way every HTTP client is
told: ``HTTPS_PROXY`` for an https endpoint (AWS's), ``HTTP_PROXY`` for an http one
(DynamoDB Local), ``NO_PROXY`` for the hosts reached directly; each name in either case, the
lowercase one winning (``proxy_variables``: the rules of ``urllib.request.getproxies_environment``,
applied to the settings' mapping, since only the settings module reads the process's
variables). ``NO_PROXY`` is matched by the standard library's own
``urllib.request.proxy_bypass_environment``: ``*``, host names and their domain suffixes,
exact addresses, optionally with a port; no address ranges.

Every connection through a proxy is a ``CONNECT`` tunnel (``datastore/aws/connections.py``
opens it), for an http endpoint too: one way through, whatever DynamoDB's scheme. A proxy is
an ``http://`` URL (``host:port`` alone means the same); its userinfo, percent-decoded, goes
to the proxy as ``Proxy-Authorization: Basic`` and is never printed (``Proxy``'s repr and the
transport's messages name the proxy's host and port only).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

# Public (urllib's own proxy_bypass on Linux), though typeshed's stub does not list it.
from urllib.request import proxy_bypass_environment  # type: ignore[attr-defined]

# What an http:// proxy listens on when its URL names no port (urllib3's and aiohttp's default).
_DEFAULT_PORT = 80


def proxy_variables(env: Mapping[str, str]) -> dict[str, str]:
    """``{scheme: value}`` of ``env``'s ``<scheme>_proxy`` variables, by the rules
    ``urllib.request.getproxies_environment`` applies to the process's variables: a name in
    any case counts, a name ending in lowercase ``_proxy`` wins (and unsets when empty), and
    ``HTTP_PROXY`` in capitals is ignored under CGI (``REQUEST_METHOD`` set: a client's
    ``Proxy:`` header). Only those variables are looked up."""
    named = [name for name in env if name.lower()[-6:] == "_proxy"]
    values = {name: env[name] for name in named}
    proxies: dict[str, str] = {}
    for name, value in values.items():
        if value:
            proxies[name.lower()[:-6]] = value
    if "REQUEST_METHOD" in env:
        proxies.pop("http", None)
    for name, value in values.items():
        if name[-6:] == "_proxy":
            if value:
                proxies[name.lower()[:-6]] = value
            else:
                proxies.pop(name.lower()[:-6], None)
    return proxies


@dataclass(frozen=True, slots=True)
class Proxy:
    """An HTTP proxy to open CONNECT tunnels through."""

    host: str
    port: int
    # The Proxy-Authorization header's value ("Basic ..."), when the URL had userinfo.
    authorization: str | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """``host:port``, for messages: never the credentials."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @classmethod
    def parse(cls, url: str) -> Proxy:
        """``url``'s proxy; ``ValueError`` (its message without the URL's credentials) for
        what is not an http:// proxy with a host."""
        given = url.strip()
        if "://" not in given:
            given = "http://" + given  # "host:port", as curl, requests and urllib take it
        try:
            parts = urlsplit(given)
            port = parts.port
        except ValueError:
            raise ValueError("is not a proxy URL (http://[user:password@]host[:port])") from None
        if parts.scheme.lower() != "http":
            raise ValueError(f"names a {parts.scheme}:// proxy; only http:// proxies (CONNECT) are supported")
        if not parts.hostname:
            raise ValueError("names no proxy host (http://[user:password@]host[:port])")
        authorization = None
        if parts.username is not None or parts.password is not None:
            userinfo = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(userinfo.encode("utf-8")).decode("ascii")
        return cls(parts.hostname, port or _DEFAULT_PORT, authorization)


@dataclass(frozen=True, slots=True)
class Proxies:
    """The proxies the settings name, and the hosts reached without one."""

    https: Proxy | None = None
    http: Proxy | None = None
    # NO_PROXY as given: comma-separated hosts, domain suffixes, "*".
    no_proxy: str | None = None

    def for_origin(self, host: str, port: int, tls: bool) -> Proxy | None:
        """The proxy a connection to ``host:port`` goes through; None: straight there."""
        proxy = self.https if tls else self.http
        if proxy is None or not self.no_proxy:
            return proxy
        # An IPv6 address is matched whole (the stdlib would read its last group as a port).
        where = host if ":" in host else f"{host}:{port}"
        return None if proxy_bypass_environment(where, {"no": self.no_proxy}) else proxy


NO_PROXIES = Proxies()
