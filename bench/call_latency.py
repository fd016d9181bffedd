"""`python -m bench.call_latency [-n N] [--gap-ms MS] [--rounds R]`: one DynamoDB call's latency, by layer.

A request's waves are round trips one after another, so what the product's client adds to
each call's latency is paid once per wave. This times one GetItem (the bench's profile
employee, the read Q3 starts with) on a fresh DynamoDB Local with the bench's data, on uvloop
as the server runs, N times each in turn, R rounds, back to back or ``MS`` apart:

- ``socket``: the very request the product signs, its bytes replayed on one kept-alive
  connection (asyncio streams): DynamoDB Local's own time plus loopback.
- ``connection``: the same signed request through the product's kept-alive connections
  (datastore/aws/connections.py: asyncio's transport, httptools' parser), the HTTP client's part.
- ``aiohttp``: the same through an aiohttp session set up as the product's was before it
  moved to those connections, kept for comparison.
- ``product``: ``by_id.get_by_id``, the entity loader's call (aiodynamo's signing and
  retry loop, the transport's CRC32 check and orjson, the scope checks, the entity parsed).

It prints each layer's p50 in ms. DynamoDB Local replays a signed request as often as it
is sent (it does not check the signature's time).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from statistics import median
from urllib.parse import urlsplit

import aiohttp
import uvloop
from aiodynamo.http.types import Request, Response

from bench.in_process import in_process
from bench.wake import process_asleep
from datastore.aws.connections import ConnectionPool, Endpoint, request_bytes
from datastore.config import DatastoreSettings
from datastore.table import by_id
from datastore.table.by_id import Kind
from datastore.table.store import Datastore
from datastore.tenancy.scope import TenantScope

Call = Callable[[], Awaitable[None]]


async def _signed(datastore: Datastore, read: Call) -> Request:
    """The request the product signs for ``read``, caught at the transport's send hooks."""
    caught: list[Request] = []

    async def catch(request: Request) -> Response | None:
        caught.append(request)
        return None  # sent as usual

    hooks = datastore.aio.hooks
    hooks.add(catch)
    try:
        await read()
    finally:
        hooks.remove(catch)
    return caught[0]


async def _replaying(request: Request) -> tuple[Call, Call]:
    """A call that sends ``request``'s bytes on one kept-alive connection and reads the answer."""
    url = urlsplit(request.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    body = request.body
    kept = {
        name: value for name, value in (request.headers or {}).items() if name.lower() not in ("content-length", "host")
    }
    head = "".join(f"{name}: {value}\r\n" for name, value in {"Host": url.netloc, **kept}.items())
    raw = f"{request.method} {url.path or '/'} HTTP/1.1\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body

    async def call() -> None:
        writer.write(raw)
        answer_head = await reader.readuntil(b"\r\n\r\n")
        lines = answer_head.split(b"\r\n")
        lengths = [int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length:")]
        if not lengths:  # DynamoDB sends its answers whole, with their length
            raise RuntimeError(f"an answer without Content-Length: {answer_head!r}")
        await reader.readexactly(lengths[0])

    async def close() -> None:
        writer.close()
        await writer.wait_closed()

    return call, close


async def measure(
    datastore: Datastore, settings: DatastoreSettings, org_id: str, emp_id: str, n: int, gap_ms: float, rounds: int
) -> dict[str, float]:
    table = datastore.table(TenantScope(org_id))
    wanted = [(Kind.EMPLOYEE, emp_id)]

    async def product() -> None:
        await by_id.get_by_id(table, wanted)

    request = await _signed(datastore, product)
    socket, close = await _replaying(request)
    endpoint = Endpoint.of(request.method, request.url)
    pool = ConnectionPool(
        endpoint,
        limit=settings.pool_size,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        tls=None,
    )
    raw = request_bytes(endpoint, request.headers, request.body or b"")
    session = _aiohttp_session(settings.pool_size, settings.connect_timeout, settings.read_timeout)

    async def connection() -> None:
        await pool.send(raw)

    async def through_aiohttp() -> None:
        async with session.request(request.method, request.url, headers=request.headers, data=request.body) as answer:
            await answer.read()

    layers: dict[str, Call] = {
        "socket": socket,
        "connection": connection,
        "aiohttp": through_aiohttp,
        "product": product,
    }
    latencies: dict[str, list[float]] = {name: [] for name in layers}
    try:
        for call in layers.values():  # warm every path (and DynamoDB Local's JIT) first
            for _ in range(300):
                await call()
        names = list(layers)
        for turn in range(rounds):
            for name in names[turn % len(names) :] + names[: turn % len(names)]:  # each round starts with the next
                call = layers[name]
                for _ in range(n):
                    if gap_ms:
                        process_asleep(gap_ms)  # the loop's thread asleep, as between a server's requests
                    started = time.perf_counter()
                    await call()
                    latencies[name].append(time.perf_counter() - started)
    finally:
        await close()
        await pool.aclose()
        await session.close()
        await datastore.aclose()
    return {name: median(values) * 1000 for name, values in latencies.items()}


def _aiohttp_session(pool_size: int, connect_timeout: float, read_timeout: float) -> aiohttp.ClientSession:
    """The aiohttp session the product sent through until 2026-11 (kept alive, no cookies, no decompression)."""
    connector = aiohttp.TCPConnector(limit=pool_size, limit_per_host=pool_size, ttl_dns_cache=300)
    timeout = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=connect_timeout, sock_read=read_timeout)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
        skip_auto_headers=("Accept-Encoding", "User-Agent"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.call_latency")
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=0.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with in_process(cost_in_response=False) as world:
        datastore = Datastore.connect(world.settings)
        org_id, emp_id = world.data.org_id, world.data.profile.emp_id
        p50 = uvloop.run(measure(datastore, world.settings, org_id, emp_id, args.n, args.gap_ms, args.rounds))
    apart = "back to back" if not args.gap_ms else f"{args.gap_ms:g} ms apart"
    print(f"one GetItem, p50 ms over {args.n * args.rounds} calls {apart}, by layer:")
    for name, value in p50.items():
        print(f"  {name:10} {value:6.3f}")


if __name__ == "__main__":
    main()
