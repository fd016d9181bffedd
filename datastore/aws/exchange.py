"""The HTTP exchange under the event loop's DynamoDB client: aiodynamo's ``HttpImplementation``.

aiodynamo signs each request and sends it through this callable, one attempt at a time (the
retry policy, ``datastore/aws/retries.py``, decides on another); this module does what a
transport owes the rest of the datastore, over the kept-alive connections of
``datastore/aws/connections.py``:

- One pool of connections per event loop and endpoint, at most ``pool_size`` connections
  each, with the timeouts botocore's urllib3 session had: a connection made within
  ``connect_timeout``, each read of an answer within ``read_timeout`` of the last.
- Failures in three kinds, by what they say about the request (``datastore/table/scoped.py`` turns
  them into ``Unavailable``): ``NotSent`` (the connection was never made: nothing reached
  DynamoDB), ``NoAnswer`` (sent, and no answer within the read timeout), ``Broken`` (the
  exchange broke once the request may have gone out: a dropped connection, an answer cut
  short or garbled, a CRC32 that does not match). Each goes to aiodynamo inside its
  ``RequestFailed``, which it raises to ``send`` (``datastore/aws/client.py``) as the attempt's failure.
- Through the proxy the settings name for the endpoint (``datastore/proxy.py``: HTTPS_PROXY,
  HTTP_PROXY, NO_PROXY), chosen once per pool: each of its connections a CONNECT tunnel.
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
import ssl
import threading
import weakref
import zlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import orjson
from aiodynamo.http.types import Request, RequestFailed, Response

from datastore.aws.connections import (
    Broken,
    ConnectionPool,
    Endpoint,
    NotSent,
    Origin,
    TransportError,
    request_bytes,
)
from datastore.aws.fastparse import BINARY_MARKERS, decode_binaries
from datastore.proxy import NO_PROXIES, Proxies

# What aiodynamo decodes in place of a body this module decoded already.
_EMPTY: Final = b"{}"
# Parsed endpoints remembered (one in practice: aiodynamo's).
_ENDPOINTS_KEPT: Final = 8


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


class HttpExchange:
    """``await exchange(request) -> Response`` over the running event loop's connections.

    Connections belong to the loop they were made in: a server process serves from one loop,
    but tests and the bench run several, so each loop gets its own pool per endpoint, on its
    first request, which ``aclose`` closes. A loop's pool is not made again once closed: a
    load a request left running past its deadline that tries again after the app's shutdown
    finds DynamoDB unreachable (``NotSent``) rather than opening connections nothing would
    close.
    """

    def __init__(
        self,
        hooks: SendHooks,
        *,
        pool_size: int,
        connect_timeout: float,
        read_timeout: float,
        tls: ssl.SSLContext | None = None,
        proxies: Proxies = NO_PROXIES,
    ) -> None:
        self._hooks = hooks
        self._proxies = proxies
        self._pool_size = pool_size
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Origin, ConnectionPool]] = (
            weakref.WeakKeyDictionary()
        )
        self._closed: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
        # aiodynamo sends every request to its one endpoint: parsed once.
        self._endpoints: dict[tuple[str, str], Endpoint] = {}
        self._tls = tls

    def pool(self, endpoint: Endpoint) -> ConnectionPool:
        """The running loop's pool for ``endpoint``, made on first use; ``NotSent`` once ``aclose`` closed them."""
        loop = asyncio.get_running_loop()
        pools = self._pools.get(loop)
        if pools is None:
            if loop in self._closed:
                raise NotSent("this event loop's connections to DynamoDB are closed (shutting down)")
            pools = self._pools[loop] = {}
        pool = pools.get(endpoint.origin)
        if pool is None:
            pool = pools[endpoint.origin] = ConnectionPool(
                endpoint,
                limit=self._pool_size,
                connect_timeout=self._connect_timeout,
                read_timeout=self._read_timeout,
                tls=self._tls_for(endpoint),
                proxy=self._proxies.for_origin(endpoint.host, endpoint.port, endpoint.tls),
            )
        return pool

    async def aclose(self) -> None:
        """Close the running loop's connections, for good."""
        loop = asyncio.get_running_loop()
        self._closed.add(loop)
        for pool in (self._pools.pop(loop, None) or {}).values():
            await pool.aclose()

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
        endpoint = self._endpoints.get((request.method, request.url))
        if endpoint is None:
            if len(self._endpoints) >= _ENDPOINTS_KEPT:
                self._endpoints.clear()
            endpoint = self._endpoints[(request.method, request.url)] = Endpoint.of(request.method, request.url)
        answer = await self.pool(endpoint).send(request_bytes(endpoint, request.headers, request.body or b""))
        if answer.crc32 is not None and zlib.crc32(answer.body) != _crc(answer.crc32):
            raise Broken("the answer's CRC32 does not match its x-amz-crc32 header")
        return answer.status, answer.body

    def _tls_for(self, endpoint: Endpoint) -> ssl.SSLContext | None:
        # The context is the client's to give (AsyncDynamo: the boto3 client's CA bundle,
        # loaded before serving); an https endpoint it gave none for is not reached.
        if not endpoint.tls:
            return None
        if self._tls is None:
            raise NotSent(f"no TLS context for https://{endpoint.host}:{endpoint.port}")
        return self._tls


def tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    """Certificates checked against ``ca_bundle``, else botocore's default bundle (what the
    boto3 client verifies with), and hostnames checked."""
    # Imported here: a process serving a plain-HTTP endpoint (DynamoDB Local) makes no context.
    from botocore.httpsession import get_cert_path

    # get_cert_path(True): botocore's default bundle (certifi's where it is installed).
    return ssl.create_default_context(cafile=ca_bundle or str(get_cert_path(True)))


def _crc(header: bytes) -> int:
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
