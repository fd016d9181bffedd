"""Fetching a small JSON document from a URL an organisation's admin gave us, safely.

Registering an identity provider makes the server fetch the provider's discovery document,
and later its keys, from URLs an admin typed (or a discovery document named): a request
forgery (SSRF) channel into wherever the server runs unless it is bounded. So every such
fetch here:

- goes to ``https`` only (``http`` too in development, for a provider on the loopback);
- resolves the host once, refuses it when any of its addresses is not a public one
  (graphql_api/auth/public_addresses.py: every special-purpose range of the IANA IPv4 and
  IPv6 registries, such as loopback, private ranges, link-local with the cloud metadata
  service at 169.254.169.254, carrier-grade NAT, and every IPv6 form that embeds one of
  them: mapped, compatible, SIIT, NAT64, 6to4), and connects to the very address it
  checked, so a DNS answer that changes between the check and the connection
  (rebinding) cannot redirect it; TLS still checks the certificate against the host name.
  Outside development only (``allow_private``);
- follows no redirect, sends no credentials or cookies, and answers only a 200;
- ends within ``timeout`` seconds overall (the name's resolution, the connection, the
  answer) and reads at most ``max_bytes`` of the answer, which must be one JSON object.

``post`` sends a webhook under the same rules (graphql_api/webhooks/): any answer is returned
rather than refused, since the receiver's status decides a retry, and its body is read to
``max_bytes`` at most and kept to ``keep``.

Blocking: callers run it off the event loop (request/blocking.py). Failures are ``FetchRefused``
with a sentence for the admin (never a stack trace or an exception's name).
"""

from __future__ import annotations

import concurrent.futures
import email.utils
import http.client
import json
import socket
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from graphql_api.auth.public_addresses import is_public

TIMEOUT_SECONDS: Final = 5.0
MAX_BYTES: Final = 64 * 1024
_CHUNK: Final = 16 * 1024
# Name resolution has no timeout of its own (the system resolver's retries decide): it runs
# on these threads and is waited for no longer than the fetch's deadline. Two, so a resolver
# that hangs cannot pile threads up: later fetches wait for them and fail on their deadline.
_RESOLVER: Final = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="outbound-dns")


class FetchRefused(OSError):
    """The document could not be fetched, or was not allowed to be; the message says why.

    An OSError, as every other failure to fetch keys is (graphql_api/auth/jwks.py)."""


def check_url(url: str, *, allow_http: bool) -> tuple[str, str, int, str]:
    """``url``'s scheme, host, port and path-with-query, or FetchRefused saying what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise FetchRefused(f"{url!r} is not a URL") from None
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes:
        raise FetchRefused(f"{url!r} must be an https:// URL")
    if not parts.hostname:
        raise FetchRefused(f"{url!r} names no host")
    if parts.username is not None or parts.password is not None:
        raise FetchRefused(f"{url!r} must not carry a user name or password")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def _resolve(host: str, port: int, deadline: float) -> list[str]:
    future = _RESOLVER.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        found = future.result(timeout=max(0.0, deadline - time.monotonic()))
    except concurrent.futures.TimeoutError:
        raise FetchRefused(f"resolving {host} took too long") from None
    except OSError:
        raise FetchRefused(f"{host} could not be resolved") from None
    return list(dict.fromkeys(str(entry[4][0]) for entry in found))


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection to one checked address, verifying the certificate for the host name."""

    def __init__(self, host: str, port: int, address: str, timeout: float, context: ssl.SSLContext) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self.pinned_address = address
        self.pinned_context = context

    def connect(self) -> None:
        raw = socket.create_connection((self.pinned_address, self.port), self.timeout)
        self.sock = self.pinned_context.wrap_socket(raw, server_hostname=self.host)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.pinned_address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.pinned_address, self.port), self.timeout)


def _connection(url: str, *, allow_private: bool, deadline: float) -> tuple[http.client.HTTPConnection, str]:
    """An unopened connection to the checked address of ``url``'s host, and the path to ask for.

    FetchRefused when the URL, its scheme or any of its host's addresses is refused."""
    scheme, host, port, path = check_url(url, allow_http=allow_private)
    addresses = _resolve(host, port, deadline)
    if not addresses:
        raise FetchRefused(f"{host} has no address")
    if not allow_private:
        refused = [address for address in addresses if not is_public(address)]
        if refused:
            raise FetchRefused(f"{host} resolves to an address that is not public ({refused[0]})")
    remaining = max(0.001, deadline - time.monotonic())
    connection: http.client.HTTPConnection = (
        _PinnedHTTPSConnection(host, port, addresses[0], remaining, ssl.create_default_context())
        if scheme == "https"
        else _PinnedHTTPConnection(host, port, addresses[0], remaining)
    )
    return connection, path


def check_destination(url: str, *, allow_private: bool, timeout: float = TIMEOUT_SECONDS) -> None:
    """Refuse ``url`` (FetchRefused) as a request to it would be, without sending one: its
    scheme, and every address its host resolves to now."""
    connection, _path = _connection(url, allow_private=allow_private, deadline=time.monotonic() + timeout)
    connection.close()


@dataclass(frozen=True, slots=True)
class Answer:
    """What a POST got back: the status, a ``Retry-After`` in seconds if one was given, and
    the start of the body (at most ``keep`` bytes of the at most ``max_bytes`` read)."""

    status: int
    retry_after: float | None
    body: bytes


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


@contextmanager
def _exchange(url: str, timeout: float, connection: http.client.HTTPConnection) -> Iterator[None]:
    """One exchange on ``connection``: its transport's failures as FetchRefused, in the same words
    for a fetch and a POST, and the connection closed after, however it ended."""
    try:
        yield
    except FetchRefused:
        raise
    except TimeoutError:
        raise FetchRefused(f"{url} took longer than {timeout:g} s") from None
    except ssl.SSLError:
        raise FetchRefused(f"{url}: the TLS connection failed (certificate or protocol)") from None
    except (OSError, http.client.HTTPException):
        raise FetchRefused(f"{url} could not be reached") from None
    finally:
        connection.close()


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    allow_private: bool,
    timeout: float,
    max_bytes: int = MAX_BYTES,
    keep: int = 1024,
) -> Answer:
    """POST ``body`` to ``url`` under the same rules as ``fetch_json`` (checked address, no
    redirect followed: a 3xx is just its status, ``timeout`` overall), reading at most
    ``max_bytes`` of the answer and keeping ``keep``. Any status is an Answer; FetchRefused
    for a refused URL, a timeout or a connection that failed. Blocking."""
    deadline = time.monotonic() + timeout
    connection, path = _connection(url, allow_private=allow_private, deadline=deadline)
    with _exchange(url, timeout, connection):
        connection.request("POST", path, body=body, headers={**headers, "User-Agent": "hr-graphql-webhooks"})
        response = connection.getresponse()
        received = bytearray()
        while len(received) < max_bytes:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FetchRefused(f"{url} took longer than {timeout:g} s")
            if connection.sock is not None:
                connection.sock.settimeout(left)
            chunk = response.read1(min(_CHUNK, max_bytes - len(received)))
            if not chunk:
                break
            received += chunk
        return Answer(response.status, _retry_after(response.getheader("Retry-After")), bytes(received[:keep]))


def fetch_json(
    url: str,
    *,
    allow_private: bool,
    timeout: float = TIMEOUT_SECONDS,
    max_bytes: int = MAX_BYTES,
) -> dict[str, Any]:
    """The JSON object at ``url`` (see the module docstring for every bound). Blocking."""
    deadline = time.monotonic() + timeout
    connection, path = _connection(url, allow_private=allow_private, deadline=deadline)
    with _exchange(url, timeout, connection):
        connection.request("GET", path, headers={"Accept": "application/json", "User-Agent": "hr-graphql"})
        response = connection.getresponse()
        if response.status != 200:
            raise FetchRefused(f"{url} answered HTTP {response.status}, not 200")
        body = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FetchRefused(f"{url} took longer than {timeout:g} s")
            if connection.sock is not None:
                connection.sock.settimeout(left)
            chunk = response.read1(_CHUNK)
            if not chunk:
                break
            body += chunk
            if len(body) > max_bytes:
                raise FetchRefused(f"{url} answered more than {max_bytes} bytes")
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise FetchRefused(f"{url} did not answer JSON") from None
    if not isinstance(document, dict):
        raise FetchRefused(f"{url} did not answer a JSON object")
    return document
