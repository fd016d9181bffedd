"""Kept-alive HTTP/1.1 connections to DynamoDB on the event loop: asyncio's transports, answers parsed by httptools.

Every wave of a request waits for one DynamoDB round trip, and the HTTP client's own time is
part of each. aiohttp, which this replaced, added about 0.16 ms to a GetItem's 0.28 ms on
DynamoDB Local back to back, and 0.5 ms to 0.75 ms after the process had slept
(``python -m bench.call_latency``): a ``ClientRequest`` and a ``ClientResponse`` built, a
task started to write each body, URL objects, header multidicts, trace hooks. DynamoDB's
JSON protocol needs none of it: one POST with a known length to one endpoint, one answer
with a length, on a connection kept for the next. So this module writes the request's bytes
to an asyncio transport and feeds the answer to httptools' response parser (llhttp, the
parser Node.js serves with; uvicorn parses this service's own requests with it), which frames
it by ``Content-Length`` or chunks and says whether the connection may be kept.

What it keeps of what a client owes DynamoDB (``datastore/aws/exchange.py`` sorts the failures):

- At most ``limit`` connections per event loop and endpoint, the warmest reused first;
  waiting for one is not an attempt's time (the request's deadline bounds it).
- A connection is made within ``connect_timeout`` (the address resolved by the loop for each
  new connection, as botocore resolves it; aiohttp kept a 300 s cache of its own; TLS
  verified with the context ``datastore/aws/exchange.py`` gives: the boto3 client's CA bundle,
  hostnames checked), else ``NotSent``: nothing reached DynamoDB.
- The answer's every read comes within ``read_timeout`` of the last one (what urllib3 and
  aiohttp's ``sock_read`` bound), else ``NoAnswer``; the connection is closed, since a late
  answer would be read as the next request's.
- A connection that breaks once the request is written (closed by the peer, an answer that
  does not parse, bytes no request asked for) fails its exchange with ``Broken`` and is
  dropped; so is one interrupted (cancelled) mid-exchange. A dropped connection is aborted,
  not closed: a TLS close would wait up to 30 s for the peer's goodbye, its socket open
  beyond ``limit`` meanwhile.
- An idle connection is reused only within ``KEEP_ALIVE`` seconds, as aiohttp's keep-alive,
  so the peer seldom closes one under a request; older ones are closed the next time the pool
  takes or returns a connection.

- Through a proxy (``datastore/proxy.py``: HTTPS_PROXY, HTTP_PROXY, NO_PROXY), each
  connection is a ``CONNECT`` tunnel: TCP to the proxy, ``CONNECT host:port`` (with the
  proxy's credentials, when its URL has them), its 200, then TLS to DynamoDB inside the tunnel
  (``loop.start_tls``, the endpoint's certificate and hostname checked as without a proxy)
  and HTTP/1.1 as on any connection. All of it within ``connect_timeout``; a proxy that
  refuses (407, 403, 5xx), closes or answers garbage is ``NotSent``, its status in the
  message and never its credentials: no byte of the request has left.

What DynamoDB never needs is not done: an answer whose end is the connection's (no length,
not chunked) fails as ``Broken``, an upgrade (101) likewise; no compression.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Final, NamedTuple, cast

import httptools

from datastore.proxy import Proxy

# aiohttp's keepalive_timeout: an idle connection older than this is not reused, and closed.
KEEP_ALIVE: Final = 15.0
# The longest head a proxy's answer to CONNECT may have (a 407's headers included).
_PROXY_HEAD_LIMIT: Final = 16 * 1024


class TransportError(Exception):
    """One attempt's failure on the way to DynamoDB or back; the message is for the server log."""


class NotSent(TransportError):
    """The connection was never made (refused, unresolvable, or not made in time): nothing was sent."""


class NoAnswer(TransportError):
    """The request was sent and no answer came within the read timeout."""


class Broken(TransportError):
    """The exchange broke after the request may have reached DynamoDB."""


# Where a connection goes: host, port, TLS.
Origin = tuple[str, int, bool]


class Answer(NamedTuple):
    status: int
    body: bytes
    # DynamoDB's x-amz-crc32 header, as sent (None without one).
    crc32: bytes | None
    # The peer lets the connection serve the next request (HTTP/1.1 without "Connection: close").
    reusable: bool


class Endpoint(NamedTuple):
    """Where a URL's requests go, and the start of each request's head."""

    host: str
    port: int
    tls: bool
    # "POST <path> HTTP/1.1\r\nHost: <host[:port]>\r\n"
    head: bytes

    @property
    def origin(self) -> Origin:
        """What a connection is to: requests of any method or path share its connections."""
        return self.host, self.port, self.tls

    @classmethod
    def of(cls, method: str, url: str) -> Endpoint:
        """``url``'s endpoint; ``NotSent`` for what is not an http(s) URL of ASCII."""
        try:
            parsed = httptools.parse_url(url.encode("ascii"))
        except (UnicodeError, httptools.HttpParserInvalidURLError):
            raise NotSent(f"not an HTTP endpoint: {url!r}") from None
        scheme = (parsed.schema or b"http").decode("ascii").lower()
        if scheme not in ("http", "https") or not parsed.host:
            raise NotSent(f"not an HTTP endpoint: {url}")
        host = parsed.host.decode("ascii")
        default = 443 if scheme == "https" else 80
        port = parsed.port or default
        path = (parsed.path or b"/").decode("ascii")
        if parsed.query:
            path += "?" + parsed.query.decode("ascii")
        # The Host header names a port only when it is not the scheme's own, as aiohttp sends it;
        # an IPv6 address in brackets.
        named = f"[{host}]" if ":" in host else host
        authority = named if port == default else f"{named}:{port}"
        return cls(host, port, scheme == "https", f"{method} {path} HTTP/1.1\r\nHost: {authority}\r\n".encode("ascii"))


def request_bytes(endpoint: Endpoint, headers: dict[str, str] | None, body: bytes) -> bytes:
    """The whole request: ``endpoint``'s head, ``headers`` and the body with its length.

    A header name or value with a line break would end the head early and smuggle lines
    into it; aiodynamo's are its signature's, never a client's, but this refuses them anyway.
    """
    lines = [endpoint.head, b"Content-Length: %d\r\n" % len(body)]
    for name, value in (headers or {}).items():
        line = f"{name}: {value}\r\n"
        if line.count("\n") != 1 or line.count("\r") != 1:
            raise NotSent(f"a request header with a line break: {name!r}")
        try:
            lines.append(line.encode("latin-1"))  # what HTTP/1.1 carries, as http.client sends it
        except UnicodeEncodeError:
            raise NotSent(f"a request header that is not Latin-1: {name!r}") from None
    lines.append(b"\r\n")
    lines.append(body)
    return b"".join(lines)


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection, one exchange at a time; httptools calls its ``on_*`` methods."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future[Answer] | None = None
        self._chunks: list[bytes] = []
        self._crc32: bytes | None = None
        self._last_read = 0.0
        self._read_timeout = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self.open = False
        self.idle_since = 0.0

    # asyncio's side

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's does not subclass asyncio.Transport, so no isinstance).
        self._transport = cast(asyncio.Transport, transport)
        self.open = True

    def data_received(self, data: bytes) -> None:
        if self._answer is None:
            self._fail(Broken("the connection sent bytes no request asked for"))
            return
        self._last_read = self._loop.time()
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
            # An upgrade (101) is not a parse error to httptools, and no answer DynamoDB gives.
            self._fail(Broken(f"an answer that does not parse as HTTP/1.1 ({type(error).__name__})"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        self._fail(Broken("the connection closed before the whole answer came"))

    # httptools' side

    def on_message_begin(self) -> None:
        if self._answer is None:  # a second answer in the same bytes: nothing asked for it
            raise Broken("the connection sent an answer no request asked for")

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"x-amz-crc32":
            self._crc32 = value

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        parser = self._parser
        status = parser.get_status_code()
        if status < 200:
            # An interim answer (100 Continue, 103 Early Hints): HTTP/1.1 clients must read past
            # any, even unasked for; the final one follows on the same exchange.
            self._chunks, self._crc32 = [], None
            return
        answer = self._answer
        self._answer = None
        self._stop_timer()  # answered: a read timeout now could only drop a good connection
        if answer is None or answer.done():
            return
        chunks = self._chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        answer.set_result(Answer(status, body, self._crc32, parser.should_keep_alive()))

    # the pool's side

    async def exchange(self, request: bytes, read_timeout: float) -> Answer:
        """Write ``request`` and wait for its answer."""
        assert self._transport is not None and self._answer is None
        loop = self._loop
        answer: asyncio.Future[Answer] = loop.create_future()
        self._answer, self._chunks, self._crc32 = answer, [], None
        self._read_timeout = read_timeout
        self._last_read = loop.time()
        self._transport.write(request)
        self._timer = loop.call_at(self._last_read + read_timeout, self._check_timeout)
        try:
            return await answer
        finally:
            self._stop_timer()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check_timeout(self) -> None:
        # One timer per exchange, moved on when data came meanwhile: cheaper than a timer per read.
        due = self._last_read + self._read_timeout
        if due > self._loop.time():
            self._timer = self._loop.call_at(due, self._check_timeout)
            return
        self._timer = None
        self._fail(NoAnswer(f"no answer within the read timeout ({self._read_timeout:g} s)"))

    def _fail(self, error: TransportError) -> None:
        answer = self._answer
        self._answer = None
        if answer is not None and not answer.done():
            answer.set_exception(error)
        self.close()

    def close(self) -> None:
        """Drop the connection at once (``abort``: no TLS goodbye awaited); again is a no-op."""
        self.open = False
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.abort()


class ConnectionPool:
    """Kept-alive connections to one origin (host, port, TLS), for one event loop."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        limit: int,
        connect_timeout: float,
        read_timeout: float,
        tls: ssl.SSLContext | None,
        proxy: Proxy | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._proxy = proxy
        self._slots = asyncio.Semaphore(limit)
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._tls = tls
        # Idle connections, the most recently used last: reused first, while the oldest age out.
        self._idle: list[_Connection] = []
        self._closed = False

    async def send(self, request: bytes) -> Answer:
        """``request``'s answer, on an idle connection or a new one."""
        async with self._slots:
            connection = self._idle_connection() or await self._connect()
            reusable = False
            try:
                answer = await connection.exchange(request, self._read_timeout)
                reusable = answer.reusable
                return answer
            finally:
                # An exchange that failed, or was cancelled halfway, leaves the connection in
                # an unknown state: it is closed, never reused.
                if reusable and connection.open and not self._closed:
                    now = asyncio.get_running_loop().time()
                    self._expire(now)
                    connection.idle_since = now
                    self._idle.append(connection)
                else:
                    connection.close()

    async def aclose(self) -> None:
        """Close the idle connections; those in use close when their exchange ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
        # Let the transports' close callbacks run before the loop may stop.
        await asyncio.sleep(0)

    def idle_connections(self) -> int:
        """How many connections wait for a request (tests)."""
        return len(self._idle)

    def _idle_connection(self) -> _Connection | None:
        idle = self._idle
        if not idle:
            return None
        self._expire(asyncio.get_running_loop().time())
        while idle:
            connection = idle.pop()
            if connection.open:
                return connection
        return None

    def _expire(self, now: float) -> None:
        """Close the idle connections past ``KEEP_ALIVE``: the oldest, at the list's start."""
        idle = self._idle
        oldest_kept = now - KEEP_ALIVE
        while idle and (idle[0].idle_since <= oldest_kept or not idle[0].open):
            idle.pop(0).close()

    async def _connect(self) -> _Connection:
        if self._closed:
            raise NotSent("this event loop's connections to DynamoDB are closed (shutting down)")
        loop = asyncio.get_running_loop()
        endpoint = self._endpoint
        proxy = self._proxy
        try:
            async with asyncio.timeout(self._connect_timeout):
                if proxy is not None:
                    return await _through(loop, proxy, endpoint, self._tls)
                _, connection = await loop.create_connection(
                    lambda: _Connection(loop),
                    endpoint.host,
                    endpoint.port,
                    ssl=self._tls,
                    server_hostname=endpoint.host if self._tls is not None else None,
                )
        except TimeoutError:
            via = "" if proxy is None else f" through the proxy at {proxy.name}"
            raise NotSent(f"no connection{via} within the connect timeout ({self._connect_timeout:g} s)") from None
        except OSError as error:  # refused, unresolvable, unreachable, TLS refused (ssl.SSLError)
            via = "" if proxy is None else f"through the proxy at {proxy.name}: "
            raise NotSent(f"{via}{type(error).__name__}: {error}") from None
        return connection


class _ProxyAnswer(asyncio.Protocol):
    """Reads the proxy's answer to CONNECT: its head, and whatever came after it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.transport: asyncio.Transport | None = None
        self.head: asyncio.Future[tuple[bytes, bytes]] = loop.create_future()
        self._received = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.head.done():
            return  # read, and judged, by the tunnel's opener
        received = self._received
        received += data
        end = received.find(b"\r\n\r\n")
        if end >= 0:
            # Nothing more until the tunnel's own protocol takes over (or the connection is dropped).
            assert self.transport is not None
            self.transport.pause_reading()
            self.head.set_result((bytes(received[:end]), bytes(received[end + 4 :])))
        elif len(received) > _PROXY_HEAD_LIMIT:
            self.head.set_exception(NotSent(f"the proxy's answer to CONNECT has a head over {_PROXY_HEAD_LIMIT} bytes"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.head.done():
            self.head.set_exception(NotSent("the proxy closed the connection before answering CONNECT"))


async def _through(
    loop: asyncio.AbstractEventLoop, proxy: Proxy, endpoint: Endpoint, tls: ssl.SSLContext | None
) -> _Connection:
    """A connection to ``endpoint`` inside a CONNECT tunnel through ``proxy``: the tunnel's
    200, then TLS to the endpoint over it when ``tls``; ``NotSent`` when the proxy refuses."""
    transport, answer = await loop.create_connection(lambda: _ProxyAnswer(loop), proxy.host, proxy.port)
    try:
        named = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
        target = f"{named}:{endpoint.port}"
        lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
        if proxy.authorization is not None:
            lines.append(f"Proxy-Authorization: {proxy.authorization}")
        transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("ascii"))
        head, rest = await answer.head
        status = _status(head)
        if status is None:
            raise NotSent(f"the proxy at {proxy.name} answered CONNECT with something other than HTTP/1.x")
        if not 200 <= status < 300:
            # The status only: a proxy's reason phrase and headers are its own words.
            raise NotSent(f"the proxy at {proxy.name} refused the tunnel to {target}: HTTP {status}")
        if rest:
            raise NotSent(f"the proxy at {proxy.name} sent bytes after its {status} before the tunnel was used")
        connection = _Connection(loop)
        if tls is not None:
            # The tunnel's protocol becomes TLS's, ours inside it; connection_made is ours to call.
            inner = await loop.start_tls(transport, connection, tls, server_hostname=endpoint.host)
            if inner is None:
                raise NotSent(f"TLS could not start inside the tunnel through {proxy.name}")
            connection.connection_made(inner)
        else:
            transport.set_protocol(connection)
            connection.connection_made(transport)
            transport.resume_reading()
        return connection
    except BaseException:
        answer.head.cancel()  # unawaited now: nothing to report when the connection is lost
        transport.abort()
        raise


def _status(head: bytes) -> int | None:
    """The status of an HTTP/1.x answer's head; None for anything else."""
    line = head.split(b"\r\n", 1)[0]
    version, _, rest = line.partition(b" ")
    code = rest[:3]
    if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit() or rest[3:4] not in (b"", b" "):
        return None
    return int(code)
