"""botocore's HTTP session on libcurl (pycurl): the same requests, for less CPU per call.

botocore sends through urllib3 and ``http.client``, which parse every answer's headers with
the ``email`` package and cost about 500 us of CPU per DynamoDB call on this stack's machine,
twice what botocore spends building, signing and parsing the call itself. libcurl does the
same exchange for about 250-300 us (``python -m bench.http_session`` prints both), so every
round trip of every request costs less CPU and answers sooner.

Only the transport changes. botocore still serialises, signs, emits its events (the
``before-send`` fault hooks of the tests run before this session is reached), retries,
parses errors and checks ``x-amz-crc32``; this session receives the prepared request and
hands back an ``AWSResponse``, raising botocore's own exception classes, so retries and
``datastore.table``'s error translation see what urllib3 would have given them:

- the connection was never made: ``EndpointConnectionError`` or ``ConnectTimeoutError``
  (nothing was sent, so a write cannot have been applied);
- the request went out and no answer came in time: ``ReadTimeoutError``;
- the connection broke on the way, or anything else failed once bytes of the request went
  out (a kept-alive connection that died with it, then libcurl's own resend refused):
  ``ConnectionClosedError``, since DynamoDB may have applied it;
- TLS failed before anything was sent: ``SSLError``.

One libcurl handle per thread (a handle is not thread-safe; the client's calls run on the
I/O pool's threads), each keeping its connection alive between calls, so the number of
connections is bounded by the pool's threads as urllib3's pool bounded it. Timeouts: the
connection within ``connect_timeout``, and each attempt's whole exchange within
``connect_timeout + read_timeout``. That bounds an attempt outright, where urllib3's read
timeout bounds each read of the socket and a trickling answer could take longer.
Proxies come from the environment as libcurl reads it (``https_proxy`` or
``HTTPS_PROXY``, ``http_proxy`` in lower case only, ``ALL_PROXY``, ``NO_PROXY``), where
botocore reads ``HTTP_PROXY`` and ``HTTPS_PROXY``; botocore's ``proxies`` setting is not
used (this service sets none). HTTP/1.1 only, as urllib3 speaks.

Anything other than a buffered POST (all DynamoDB's JSON protocol sends) goes to the
session botocore made. Without pycurl (the Lambda package: pycurl publishes no wheel for
Lambda's manylinux2014 platform) ``install`` leaves botocore's session in place.
"""

from __future__ import annotations

import logging
import threading
import weakref
from io import BytesIO
from typing import TYPE_CHECKING, Any, Final, cast

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import (
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
    SSLError,
)
from botocore.httpsession import get_cert_path

from datastore import library_internals

try:
    import pycurl
except ImportError:  # pragma: no cover - the Lambda package (see the module docstring)
    pycurl = None

if TYPE_CHECKING:
    from botocore.compat import HTTPHeaders
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("hr.dynamodb")

# libcurl adds these unless told not to; botocore sends neither, and 100-continue would cost
# a round trip on every body over 1 KiB.
_SUPPRESSED: Final = (b"Expect:", b"Accept:")

if pycurl is not None:
    _NOT_CONNECTED: Final = frozenset({pycurl.E_COULDNT_CONNECT, pycurl.E_COULDNT_RESOLVE_HOST})
    _TLS: Final = frozenset(
        code
        for code in (
            getattr(pycurl, name, None)
            for name in ("E_SSL_CONNECT_ERROR", "E_PEER_FAILED_VERIFICATION", "E_SSL_CACERT", "E_SSL_CACERT_BADFILE")
        )
        if code is not None
    )
    _BROKEN: Final = frozenset({pycurl.E_GOT_NOTHING, pycurl.E_SEND_ERROR, pycurl.E_RECV_ERROR, pycurl.E_PARTIAL_FILE})


class CurlSession:
    """The ``http_session`` of a botocore Endpoint: ``send(request) -> AWSResponse``."""

    def __init__(self, *, verify: bool | str, connect_timeout: float, read_timeout: float, fallback: Any) -> None:
        if pycurl is None:
            raise RuntimeError("pycurl is not installed")
        self._verify = verify
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        # botocore's own session: what the bench compares with (bench/http_session.py).
        self.fallback = fallback
        self._local = threading.local()
        # Every live thread's handle (live_handles). Weak: a thread that ends takes its handle,
        # and so its connection, with it.
        self._handles: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._generation = 0

    def send(self, request: AWSPreparedRequest) -> AWSResponse:
        body = request.body
        if request.method != "POST" or not isinstance(body, bytes | str) or request.stream_output:
            response: AWSResponse = self.fallback.send(request)
            return response
        handle = self._handle()
        answer, header_lines = BytesIO(), BytesIO()
        handle.setopt(pycurl.URL, request.url)
        payload = body.encode() if isinstance(body, str) else body
        lines = _header_lines(request.headers)
        handle.setopt(pycurl.POSTFIELDS, payload)
        handle.setopt(pycurl.HTTPHEADER, [*lines, *_SUPPRESSED])
        handle.setopt(pycurl.WRITEFUNCTION, answer.write)
        handle.setopt(pycurl.HEADERFUNCTION, header_lines.write)
        handle.setopt(pycurl.TIMEOUT_MS, self._attempt_ms(request))
        try:
            handle.perform()
        except pycurl.error as error:
            raise _botocore_error(handle, error, request) from None
        finally:
            _note_resend(handle, len(payload) + sum(len(line) + 2 for line in lines), request)
        status = int(handle.getinfo(pycurl.RESPONSE_CODE))
        # botocore wraps any mapping in its HeadersDict (urllib3's session hands it urllib3's
        # HTTPHeaderDict); the stubs name http.client's class only.
        headers = cast("HTTPHeaders", _parse_headers(header_lines.getvalue()))
        return AWSResponse(request.url, status, headers, _Body(answer.getvalue()))

    def close(self) -> None:
        """Retire every thread's handle: each thread closes its own when it next sends (a
        thread that ends drops it with its connection). Closing another thread's handle is
        unsafe while it may be in a call: pycurl's own check for that races with the call."""
        with self._lock:
            self._generation += 1
        self.fallback.close()

    def live_handles(self) -> int:
        """Handles that threads still hold (tests)."""
        return len(self._handles)

    def _handle(self) -> Any:
        local = self._local
        handle = getattr(local, "handle", None)
        if handle is not None:
            if local.generation == self._generation:
                return handle
            handle.close()  # retired by close(); only this thread ever uses it
        handle = pycurl.Curl()
        # No signals: libcurl's DNS timeouts would otherwise use SIGALRM, unsafe in threads.
        handle.setopt(pycurl.NOSIGNAL, 1)
        handle.setopt(pycurl.TCP_NODELAY, 1)
        handle.setopt(pycurl.TCP_KEEPALIVE, 1)
        # What urllib3 speaks: libcurl would otherwise offer HTTP/2 to a TLS endpoint or proxy.
        handle.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        handle.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, round(self._connect_timeout * 1000)))
        if self._verify is False:
            handle.setopt(pycurl.SSL_VERIFYPEER, 0)
            handle.setopt(pycurl.SSL_VERIFYHOST, 0)
        else:
            # A bundle's path, or True for botocore's default (certifi's, or its own); the stubs say bool.
            handle.setopt(pycurl.CAINFO, get_cert_path(cast(bool, self._verify)))
        with self._lock:
            self._handles.add(handle)
            local.handle, local.generation = handle, self._generation
        return handle

    def _attempt_ms(self, request: AWSPreparedRequest) -> int:
        # botocore may lower one request's read timeout through its context (as urllib3's session honours).
        context = getattr(request, "context", None) or {}
        read_timeout = context.get("read_timeout") or self._read_timeout
        return max(1, round((self._connect_timeout + read_timeout) * 1000))


class _Body:
    """What AWSResponse reads its content from (urllib3's response has the same ``stream``)."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


def _header_lines(headers: Any) -> list[bytes]:
    # botocore's values are str, or bytes it has encoded itself; http.client sends str as latin-1.
    lines = []
    for name, value in headers.items():
        encoded = value if isinstance(value, bytes) else str(value).encode("latin-1")
        # libcurl reads "Name:" with nothing after it as "do not send Name"; "Name;" sends it empty.
        lines.append(name.encode("latin-1") + (b": " + encoded if encoded else b";"))
    return lines


def _parse_headers(raw: bytes) -> dict[str, str]:
    """The fields of the last block that starts with a status line (a 100 Continue block can
    precede it; a chunked answer's trailers follow it), lower-cased; repeated fields joined
    with ", " as urllib3 joins them."""
    blocks = raw.decode("latin-1").split("\r\n\r\n")
    lines = next((block for block in reversed(blocks) if block.startswith("HTTP/")), "").split("\r\n")[1:]
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon:
            continue
        key, value = name.strip().lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def _note_resend(handle: Any, one_request: int, request: AWSPreparedRequest) -> None:
    """Log when libcurl sent the request more than once.

    libcurl resends a request, on a new connection, when the kept-alive connection it reused
    turns out dead before any answer (there is no option to stop it). Had DynamoDB read the
    first copy, a write may be applied twice, as after botocore's own retry of a dropped
    connection; unlike that retry, this one is invisible to botocore, so it is logged here.
    ``one_request`` is the request's body and headers: one copy on the wire (request line
    and Host added) is less than twice that, two are more.
    """
    if int(handle.getinfo(pycurl.REQUEST_SIZE)) > 2 * one_request:
        target = request.headers.get("X-Amz-Target", b"")
        operation = target.decode("latin-1") if isinstance(target, bytes) else str(target)
        log.warning("DynamoDB request %s resent on a new connection: the kept-alive one died", operation)


def _botocore_error(handle: Any, error: Any, request: AWSPreparedRequest) -> Exception:
    code = error.args[0] if error.args else None
    url = request.url
    # REQUEST_SIZE counts the bytes of requests sent: none means nothing reached DynamoDB.
    sent = int(handle.getinfo(pycurl.REQUEST_SIZE)) > 0
    if code == pycurl.E_OPERATION_TIMEDOUT:
        return (
            ReadTimeoutError(endpoint_url=url, error=error)
            if sent
            else ConnectTimeoutError(endpoint_url=url, error=error)
        )
    if sent:
        # Whatever failed after that (a reused connection that died with the request on it,
        # then libcurl's own resend refused or broken), DynamoDB may have applied it.
        return ConnectionClosedError(endpoint_url=url, error=error, request=request)
    if code in _NOT_CONNECTED:
        return EndpointConnectionError(endpoint_url=url, error=error)
    if code in _TLS:
        return SSLError(endpoint_url=url, error=error)
    if code in _BROKEN:
        return ConnectionClosedError(endpoint_url=url, error=error, request=request)
    return HTTPClientError(error=error)


def install(client: DynamoDBClient, *, verify: bool | str, connect_timeout: float, read_timeout: float) -> bool:
    """Send ``client``'s requests through a CurlSession; False (botocore's session kept)
    without pycurl or on a botocore whose endpoint keeps no ``http_session``."""
    fallback = library_internals.http_session(client)
    if pycurl is None or fallback is None or isinstance(fallback, CurlSession):
        return isinstance(fallback, CurlSession)
    return library_internals.set_http_session(
        client,
        CurlSession(verify=verify, connect_timeout=connect_timeout, read_timeout=read_timeout, fallback=fallback),
    )
