"""The HTTP exchange under the event loop's DynamoDB client: aiodynamo's ``HttpImplementation`` over aiohttp.

aiodynamo signs each request, sends it through this callable and retries what it may; this
module does what a transport owes the rest of the datastore:

- Timeouts: an attempt connects within ``connect_timeout`` and waits at most
  ``read_timeout`` for each read of its answer (aiohttp's ``sock_connect`` and ``sock_read``,
  what botocore's urllib3 session did). Waiting for one of the ``pool_size`` connections is
  not an attempt's time: the request's deadline bounds it, as it bounded the wait for an I/O
  thread.
- Failures in three kinds, by what they say about the request (``datastore/table.py`` turns
  them into ``Unavailable``): ``NotSent`` (the connection was never made: nothing reached
  DynamoDB), ``NoAnswer`` (sent, and no answer within the read timeout), ``Broken`` (the
  exchange broke once the request may have gone out: a dropped connection, an answer cut
  short or garbled, a CRC32 that does not match). Each goes to aiodynamo inside its
  ``RequestFailed``, which it retries.
- DynamoDB's ``x-amz-crc32`` header checked against the body (botocore does the same), so a
  corrupted answer is retried rather than read.
- A successful body decoded with orjson (about 2.5x faster than the ``json.loads`` aiodynamo
  calls, ``python -m bench.client_cost``): for a call made inside ``decoded()``, the parsed
  body goes to that call's slot and aiodynamo is handed ``{}`` to decode. Only a 200 is
  decoded here; aiodynamo reads every error body itself.
- Send hooks (``SendHooks``): called with each attempt's signed request before it is sent;
  one may answer in DynamoDB's place or raise one of the three kinds. The tests inject
  faults and read signatures there (``tests/datastore/faults.py``, ``tests/sts.py``), as
  they do at botocore's ``before-send`` for the boto3 client. Empty in production: one
  attribute read per attempt.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
import zlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import aiohttp
import orjson
from aiodynamo.http.types import Request, RequestFailed, Response

from datastore.fastparse import BINARY_MARKERS, decode_binaries

_CRC32: Final = "x-amz-crc32"
# What aiodynamo decodes in place of a body this module decoded already.
_EMPTY: Final = b"{}"


class TransportError(Exception):
    """One attempt's failure on the way to DynamoDB or back; the message is for the server log."""


class NotSent(TransportError):
    """The connection was never made (refused, unresolvable, or not made in time): nothing was sent."""


class NoAnswer(TransportError):
    """The request was sent and no answer came within the read timeout."""


class Broken(TransportError):
    """The exchange broke after the request may have reached DynamoDB."""


SendHook = Callable[[Request], Awaitable[Response | None]]


class SendHooks:
    """Hooks every attempt passes before it is sent (tests); thread-safe to change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.hooks: tuple[SendHook, ...] = ()

    def add(self, hook: SendHook) -> None:
        with self._lock:
            self.hooks = (*self.hooks, hook)

    def remove(self, hook: SendHook) -> None:
        with self._lock:
            self.hooks = tuple(h for h in self.hooks if h is not hook)


class _Slot:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: dict[str, Any] | None = None


_slot: ContextVar[_Slot | None] = ContextVar("dynamodb_decoded_body", default=None)


@contextmanager
def decoded() -> Iterator[_Slot]:
    """Successful bodies of the call made meanwhile, in this context, are decoded into the slot."""
    slot = _Slot()
    token = _slot.set(slot)
    try:
        yield slot
    finally:
        _slot.reset(token)


class AiohttpExchange:
    """``await exchange(request) -> Response`` over the running event loop's aiohttp session.

    An aiohttp session belongs to the loop it was made in: a server process serves from one
    loop, but tests and the bench run several, so each loop gets its own session, on its
    first request, which ``aclose`` closes. A loop's session is not made again once closed:
    a load a request left running past its deadline that tries again after the app's
    shutdown finds DynamoDB unreachable (``NotSent``) rather than opening connections
    nothing would close.
    """

    def __init__(self, hooks: SendHooks, *, pool_size: int, connect_timeout: float, read_timeout: float) -> None:
        self._hooks = hooks
        self._options = (pool_size, connect_timeout, read_timeout)
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
            weakref.WeakKeyDictionary()
        )
        self._closed: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()

    def session(self) -> aiohttp.ClientSession:
        """The running loop's session, made on first use; ``NotSent`` once ``aclose`` closed it."""
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            if loop in self._closed:
                raise NotSent("this event loop's connections to DynamoDB are closed (shutting down)")
            session = self._sessions[loop] = make_session(*self._options)
        return session

    async def aclose(self) -> None:
        """Close the running loop's session and its connections, for good."""
        loop = asyncio.get_running_loop()
        self._closed.add(loop)
        session = self._sessions.pop(loop, None)
        if session is not None:
            await session.close()

    async def __call__(self, request: Request) -> Response:
        try:
            for hook in self._hooks.hooks:
                answer = await hook(request)
                if answer is not None:
                    return _answer(answer.status, answer.body)
            status, body = await self._send(request)
        except TransportError as error:
            raise RequestFailed(error) from None
        return _answer(status, body)

    async def _send(self, request: Request) -> tuple[int, bytes]:
        try:
            async with self.session().request(
                request.method, request.url, headers=request.headers, data=request.body
            ) as response:
                body = await response.read()
                status, crc = response.status, response.headers.get(_CRC32)
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as error:
            raise NotSent(type(error).__name__) from None
        except aiohttp.SocketTimeoutError:
            raise NoAnswer("SocketTimeoutError") from None
        except (aiohttp.ClientError, OSError) as error:
            raise Broken(type(error).__name__) from None
        if crc is not None and zlib.crc32(body) != _crc(crc):
            raise Broken("the answer's CRC32 does not match its x-amz-crc32 header")
        return status, body


def _crc(header: str) -> int:
    try:
        return int(header)
    except ValueError:
        return -1  # never a CRC32: the answer is garbled


def _answer(status: int, body: bytes) -> Response:
    slot = _slot.get()
    if status != 200 or slot is None:
        return Response(status, body)
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return Response(status, body)  # aiodynamo fails to decode it too, in its own words
    if not isinstance(value, dict):
        return Response(status, body)
    if BINARY_MARKERS[0] in body or BINARY_MARKERS[1] in body:
        decode_binaries(value)  # bytes, as botocore hands them out
    slot.value = value
    return Response(status, _EMPTY)


def make_session(pool_size: int, connect_timeout: float, read_timeout: float) -> aiohttp.ClientSession:
    """An aiohttp session for the running event loop: at most ``pool_size`` connections, kept alive.

    No cookies (DynamoDB sets none), no proxy from the environment (botocore's session read
    HTTPS_PROXY; this service sets none), and no auto-decompression header (DynamoDB
    answers uncompressed JSON).
    """
    connector = aiohttp.TCPConnector(limit=pool_size, limit_per_host=pool_size, ttl_dns_cache=300)
    timeout = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=connect_timeout, sock_read=read_timeout)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
        skip_auto_headers=("Accept-Encoding", "User-Agent"),
    )
