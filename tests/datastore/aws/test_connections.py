"""The kept-alive connections under the event loop's DynamoDB client (datastore/aws/connections.py),
against real sockets on the loopback: framing, reuse, the pool's bound, timeouts, what a
broken or cancelled exchange leaves, TLS verification."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import zlib
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvloop
from aiodynamo.http.types import Request, RequestFailed
from yarl import URL

from datastore.aws import connections
from datastore.aws.client import AsyncDynamo, Mirror, send
from datastore.aws.connections import (
    Answer,
    Broken,
    ConnectionPool,
    Endpoint,
    NoAnswer,
    NotSent,
    request_bytes,
)
from datastore.aws.exchange import HttpExchange, SendHooks
from datastore.errors import Unavailable
from tests.certificates import self_signed
from tests.datastore.aws.test_exchange import ITEM_BODY, KEY
from tests.datastore.loopback import Server, answer, replying, serving

T = TypeVar("T")


def pool_at(port: int, *, limit: int = 4, read_timeout: float = 0.5) -> ConnectionPool:
    return ConnectionPool(
        Endpoint.of("POST", f"http://127.0.0.1:{port}/"),
        limit=limit,
        connect_timeout=0.5,
        read_timeout=read_timeout,
        tls=None,
    )


def post(pool: ConnectionPool, port: int, body: bytes = b'{"n":1}') -> Awaitable[Answer]:
    endpoint = Endpoint.of("POST", f"http://127.0.0.1:{port}/")
    return pool.send(request_bytes(endpoint, {"X-Amz-Target": "DynamoDB_20120810.GetItem"}, body))


# Every test runs on asyncio's own loop and on uvloop, which the servers run.
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}
_loop_factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop


@pytest.fixture(autouse=True, params=list(LOOPS))
def event_loop_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    global _loop_factory
    _loop_factory = LOOPS[request.param]
    yield request.param
    _loop_factory = asyncio.new_event_loop


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``main()`` on the test's event loop, failed rather than hung after 10 s (a timeout
    that no longer fires would otherwise wait for ever)."""

    async def bounded() -> T:
        async with asyncio.timeout(10):
            return await main()

    with asyncio.Runner(loop_factory=_loop_factory) as runner:
        return runner.run(bounded())


def test_request__its_bytes__head_host_with_port_length_headers_then_body() -> None:
    endpoint = Endpoint.of("POST", "http://127.0.0.1:8000/")
    raw = request_bytes(endpoint, {"X-Amz-Target": "T", "Authorization": "A"}, b"{}")
    assert raw == (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Length: 2\r\nX-Amz-Target: T\r\nAuthorization: A\r\n\r\n{}"
    )


AWS = "dynamodb.eu-west-1.amazonaws.com"


@pytest.mark.parametrize(
    ("url", "host", "port", "tls", "authority"),
    [
        (
            "https://dynamodb.eu-west-1.amazonaws.com",
            "dynamodb.eu-west-1.amazonaws.com",
            443,
            True,
            b"dynamodb.eu-west-1.amazonaws.com",
        ),
        (
            "https://dynamodb.eu-west-1.amazonaws.com:8443/",
            "dynamodb.eu-west-1.amazonaws.com",
            8443,
            True,
            b"dynamodb.eu-west-1.amazonaws.com:8443",
        ),
        ("http://localhost/", "localhost", 80, False, b"localhost"),
        ("http://[::1]:8000/", "::1", 8000, False, b"[::1]:8000"),
    ],
)
def test_endpoint__of_a_url__where_to_connect_and_the_host_header(
    url: str, host: str, port: int, tls: bool, authority: bytes
) -> None:
    endpoint = Endpoint.of("POST", url)
    assert (endpoint.host, endpoint.port, endpoint.tls) == (host, port, tls)
    assert endpoint.head == b"POST / HTTP/1.1\r\nHost: " + authority + b"\r\n"


@pytest.mark.parametrize("header", [{"X-Amz-Target": "T\r\nX-Evil: 1"}, {"X-Amz-Target": "T\nX"}, {"X\r\nY": "v"}])
def test_request__a_header_with_a_line_break__refused_before_anything_is_sent(header: dict[str, str]) -> None:
    with pytest.raises(NotSent, match="line break"):
        request_bytes(Endpoint.of("POST", "http://127.0.0.1:1/"), header, b"{}")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "http://dynamodb.example\u00e9/", "not a url"])
def test_not_an_http_url__refused_before_anything_is_sent(url: str) -> None:
    with pytest.raises(NotSent):
        Endpoint.of("POST", url)


def test_request__a_header_beyond_latin_1__refused_before_anything_is_sent() -> None:
    with pytest.raises(NotSent, match="Latin-1"):
        request_bytes(Endpoint.of("POST", "http://127.0.0.1:1/"), {"X-Amz-Target": "\u20ac"}, b"{}")


def test_kept_alive__three_calls__one_connection_each_answer_its_own() -> None:
    async def echo(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            body = await server.request(reader)
            writer.write(answer(body, extra=f"x-amz-crc32: {zlib.crc32(body)}\r\n"))

    async def main() -> tuple[list[Answer], Server]:
        async with serving(echo) as (server, port):
            pool = pool_at(port)
            answers = [await post(pool, port, f'{{"n":{n}}}'.encode()) for n in range(3)]
            await pool.aclose()
            return answers, server

    answers, server = run(main)
    assert [a.body for a in answers] == [b'{"n":0}', b'{"n":1}', b'{"n":2}']
    assert all(a.status == 200 and a.reusable for a in answers)
    assert answers[1].crc32 == str(zlib.crc32(b'{"n":1}')).encode()
    assert server.connections == 1


def test_chunked_answer__joined() -> None:
    async def main() -> Answer:
        chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        async with serving(replying(chunked)) as (_server, port):
            pool = pool_at(port)
            result = await post(pool, port)
            await pool.aclose()
            return result

    assert run(main).body == b"abcde"


def test_interim_answers__read_past__the_final_one_answers() -> None:
    """HTTP/1.1 clients must read past 1xx answers, even ones they did not ask for."""

    async def interim(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            body = await server.request(reader)
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
            await writer.drain()
            writer.write(answer(body))

    async def main() -> tuple[list[Answer], Server]:
        async with serving(interim) as (server, port):
            pool = pool_at(port)
            answers = [await post(pool, port, b'{"n":1}'), await post(pool, port, b'{"n":2}')]
            await pool.aclose()
            return answers, server

    answers, server = run(main)
    assert [(a.status, a.body) for a in answers] == [(200, b'{"n":1}'), (200, b'{"n":2}')]
    assert server.connections == 1


def test_connection_close__answered__the_next_call_on_a_new_connection() -> None:
    async def once(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.request(reader)
        writer.write(answer(extra="Connection: close\r\n"))
        await writer.drain()

    async def main() -> tuple[list[Answer], Server]:
        async with serving(once) as (server, port):
            pool = pool_at(port)
            answers = [await post(pool, port), await post(pool, port)]
            idle = pool.idle_connections()
            await pool.aclose()
            assert idle == 0
            return answers, server

    answers, server = run(main)
    assert [a.reusable for a in answers] == [False, False]
    assert server.connections == 2


def test_peer_closes_an_idle_connection__the_next_call_opens_another_without_an_error() -> None:
    async def answer_one_then_close(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.request(reader)
        writer.write(answer())
        await writer.drain()  # then closes, as a server's idle timeout would

    async def main() -> Server:
        async with serving(answer_one_then_close) as (server, port):
            pool = pool_at(port)
            await post(pool, port)
            await asyncio.sleep(0.1)  # the close arrives while the connection idles
            await post(pool, port)
            await pool.aclose()
            return server

    server = run(main)
    assert server.connections == 2 and len(server.requests) == 2


def test_idle_longer_than_keep_alive__not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connections, "KEEP_ALIVE", 0.05)

    async def serve_all(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await server.request(reader)
            writer.write(answer())

    async def main() -> Server:
        async with serving(serve_all) as (server, port):
            pool = pool_at(port)
            await post(pool, port)
            await post(pool, port)  # within KEEP_ALIVE: the same connection
            await asyncio.sleep(0.1)
            await post(pool, port)
            await pool.aclose()
            return server

    server = run(main)
    assert server.connections == 2


def test_answer_cut_short__broken_and_the_connection_dropped() -> None:
    async def main() -> Exception:
        cut = b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"Item"'
        async with serving(replying(cut, then_close=True)) as (_server, port):
            pool = pool_at(port)
            with pytest.raises(Broken) as raised:
                await post(pool, port)
            assert pool.idle_connections() == 0
            await pool.aclose()
            return raised.value

    assert "closed before the whole answer" in str(run(main))


def test_garbled_answer__broken() -> None:
    async def main() -> None:
        async with serving(replying(b"SMTP ready\r\n\r\n")) as (_server, port):
            pool = pool_at(port)
            with pytest.raises(Broken, match="does not parse"):
                await post(pool, port)
            await pool.aclose()

    run(main)


@pytest.mark.parametrize("together", [False, True], ids=["apart", "in-one-read"])
def test_two_answers_to_one_request__the_connection_dropped_the_second_never_read_as_the_next(together: bool) -> None:
    async def twice(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if server.connections > 1:  # the client's next connection: one answer per request
            while True:
                await server.request(reader)
                writer.write(answer(b'{"fresh":1}'))
        await server.request(reader)
        if together:  # both in one segment, parsed from one read
            writer.write(answer(b'{"first":1}') + answer(b'{"second":1}'))
        else:
            writer.write(answer(b'{"first":1}'))
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(answer(b'{"second":1}'))  # an answer no request asked for
        await writer.drain()
        while True:
            await server.request(reader)
            writer.write(answer(b'{"late":1}'))

    async def main() -> tuple[list[bytes], Server]:
        async with serving(twice) as (server, port):
            pool = pool_at(port)
            first = await post(pool, port)
            await asyncio.sleep(0.1)
            second = await post(pool, port)
            await pool.aclose()
            return [first.body, second.body], server

    bodies, server = run(main)
    assert bodies == [b'{"first":1}', b'{"fresh":1}']
    assert server.connections == 2


def test_no_answer__within_the_read_timeout__no_answer_and_the_connection_closed() -> None:
    async def silent(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.request(reader)
        await reader.read()  # until the client closes

    async def main() -> float:
        async with serving(silent) as (server, port):
            pool = pool_at(port, read_timeout=0.2)
            started = asyncio.get_running_loop().time()
            with pytest.raises(NoAnswer):
                await post(pool, port)
            waited = asyncio.get_running_loop().time() - started
            await asyncio.sleep(0.05)
            assert server.open_now == 0  # closed, so a late answer is never read as the next one's
            await pool.aclose()
            return waited

    assert run(main) >= 0.19  # uvloop keeps time in whole milliseconds


def test_trickling_answer__each_read_within_the_read_timeout__answered() -> None:
    """The read timeout bounds each read, not the whole answer (as urllib3's and aiohttp's sock_read)."""
    body = b'{"Items":[1,2,3,4,5,6]}'

    async def trickle(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.request(reader)
        raw = answer(body)
        for start in range(0, len(raw), 8):
            writer.write(raw[start : start + 8])
            await writer.drain()
            await asyncio.sleep(0.05)
        await reader.read()

    async def main() -> Answer:
        async with serving(trickle) as (_server, port):
            pool = pool_at(port, read_timeout=0.15)
            result = await post(pool, port)
            await pool.aclose()
            return result

    # About 0.3 s in all, twice the read timeout.
    assert run(main).body == body


def test_cancelled_mid_exchange__the_connection_dropped_and_its_late_answer_never_read() -> None:
    async def slow_then_fast(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await server.request(reader)
            n = len(server.requests)  # counted across connections
            if n == 1:
                await asyncio.sleep(0.2)
            writer.write(answer(f'{{"answer":{n}}}'.encode()))
            await writer.drain()

    async def main() -> tuple[bytes, Server]:
        async with serving(slow_then_fast) as (server, port):
            pool = pool_at(port)
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await post(pool, port)
            following = await post(pool, port)
            await pool.aclose()
            return following.body, server

    body, server = run(main)
    assert body == b'{"answer":2}'  # the second request's own answer, not the first's late one
    assert server.connections == 2


def test_pool__more_calls_than_connections__at_most_the_limit_open_all_answered() -> None:
    async def slow(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            body = await server.request(reader)
            await asyncio.sleep(0.05)
            writer.write(answer(body))
            await writer.drain()

    async def main() -> tuple[list[Answer], Server]:
        async with serving(slow) as (server, port):
            pool = pool_at(port, limit=2)
            answers = await asyncio.gather(*(post(pool, port, f'{{"n":{n}}}'.encode()) for n in range(6)))
            await pool.aclose()
            return answers, server

    answers, server = run(main)
    assert sorted(a.body for a in answers) == sorted(f'{{"n":{n}}}'.encode() for n in range(6))
    assert server.most_open == 2 and server.connections == 2


def test_closed_pool__an_exchange_in_flight_ends_and_its_connection_closes() -> None:
    async def slow(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.request(reader)
        await asyncio.sleep(0.05)
        writer.write(answer())
        await writer.drain()
        await reader.read()

    async def main() -> None:
        async with serving(slow) as (_server, port):
            pool = pool_at(port)
            call = asyncio.ensure_future(post(pool, port))
            await asyncio.sleep(0.01)
            await pool.aclose()
            assert (await call).status == 200
            assert pool.idle_connections() == 0
            with pytest.raises(NotSent, match="closed"):
                await post(pool, port)

    run(main)


def test_refused__nothing_listening__not_sent() -> None:
    from datastore.dev.local import free_port

    async def main() -> None:
        port = free_port()
        pool = pool_at(port)
        with pytest.raises(NotSent, match="ConnectionRefusedError"):
            await post(pool, port)

    run(main)


def test_tls__verified_against_the_clients_bundle__else_not_sent(tmp_path: Path) -> None:
    """Through the whole client: an https endpoint's certificate checked against the CA bundle
    the boto3 client uses (Mirror.ca_bundle); without it in the bundle, nothing is sent."""
    cert, key = self_signed(tmp_path)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)

    async def item(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await server.request(reader)
            writer.write(answer(ITEM_BODY))

    async def get_item(port: int, bundle: str | None) -> dict[str, Any] | Unavailable:
        mirror = Mirror(URL(f"https://127.0.0.1:{port}"), "eu-west-1", 0.5, 0.5, 2, 4, ca_bundle=bundle)
        dynamo = AsyncDynamo(mirror, None)
        try:
            return await send(dynamo.client(), "GetItem", {"TableName": "t", "Key": KEY})
        except Unavailable as error:
            return error
        finally:
            await dynamo.aclose()

    async def main() -> tuple[dict[str, Any] | Unavailable, dict[str, Any] | Unavailable, Server]:
        async with serving(item, tls=server_tls) as (server, port):
            return await get_item(port, str(cert)), await get_item(port, None), server

    trusted, untrusted, server = run(main)
    assert isinstance(trusted, dict) and trusted["Item"]["B"] == {"B": b"\x00\x01"}
    assert isinstance(untrusted, Unavailable) and str(untrusted) == "DynamoDB could not be reached"
    assert (untrusted.cause or "").startswith("NotSent") and "CERTIFICATE_VERIFY_FAILED" in (untrusted.cause or "")
    assert len(server.requests) == 1


def test_upgrade_answer__broken_nothing_logged(caplog: pytest.LogCaptureFixture) -> None:
    switching = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"

    async def main() -> None:
        async with serving(replying(switching)) as (_server, port):
            pool = pool_at(port)
            with pytest.raises(Broken, match="does not parse"):
                await post(pool, port)
            await pool.aclose()

    run(main)
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_idle_past_keep_alive__closed_while_the_pool_is_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connections left idle under a busy one are closed once past KEEP_ALIVE, not kept open."""
    monkeypatch.setattr(connections, "KEEP_ALIVE", 0.2)

    async def slow(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await server.request(reader)
            await asyncio.sleep(0.05)
            writer.write(answer())
            await writer.drain()

    async def main() -> tuple[int, int]:
        async with serving(slow) as (server, port):
            pool = pool_at(port, limit=3)
            await asyncio.gather(*(post(pool, port) for _ in range(3)))  # three connections
            opened = server.open_now
            for _ in range(8):  # one at a time: the warmest connection, over 0.8 s
                await post(pool, port)
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.05)  # the server sees the closes
            still_open = server.open_now
            await pool.aclose()
            return opened, still_open

    opened, still_open = run(main)
    assert (opened, still_open) == (3, 1)


def test_connect_timeout__a_listener_that_never_accepts__not_sent() -> None:
    """A connection not made within the connect timeout: NotSent, nothing sent. The listener's
    queue is full (a backlog of none, taken by a first connection), so the kernel answers no
    more handshakes."""

    async def main() -> tuple[NotSent, float]:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        filler = socket.create_connection(("127.0.0.1", port))
        loop = asyncio.get_running_loop()
        try:
            pool = pool_at(port)
            started = loop.time()
            with pytest.raises(NotSent, match="connect timeout") as raised:
                await post(pool, port)
            return raised.value, loop.time() - started
        finally:
            filler.close()
            listener.close()

    _error, waited = run(main)
    assert 0.5 <= waited < 2.0


def test_tls__a_certificate_for_another_host__not_sent(tmp_path: Path) -> None:
    """Trusted (in the bundle) but issued for another name: the hostname check refuses it."""
    cert, key = self_signed(tmp_path, host="elsewhere.example")
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)

    async def never_asked(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.request(reader)

    async def main() -> tuple[Unavailable | dict[str, Any], Server]:
        async with serving(never_asked, tls=server_tls) as (server, port):
            mirror = Mirror(URL(f"https://127.0.0.1:{port}"), "eu-west-1", 0.5, 0.5, 2, 4, ca_bundle=str(cert))
            dynamo = AsyncDynamo(mirror, None)
            try:
                return await send(dynamo.client(), "GetItem", {"TableName": "t", "Key": KEY}), server
            except Unavailable as error:
                return error, server
            finally:
                await dynamo.aclose()

    result, server = run(main)
    assert isinstance(result, Unavailable) and str(result) == "DynamoDB could not be reached"
    assert (result.cause or "").startswith("NotSent") and "match" in (result.cause or "")
    assert server.requests == []


def test_https_endpoint_without_a_tls_context__not_sent_and_nothing_connected() -> None:
    """The client gives the TLS context (the boto3 client's CA bundle); an https URL it gave
    none for is never reached, rather than verified with some other bundle."""
    exchange = HttpExchange(SendHooks(), pool_size=1, connect_timeout=0.5, read_timeout=0.5)

    async def main() -> RequestFailed:
        request = Request(method="POST", url="https://127.0.0.1:1/", headers={}, body=b"{}")
        with pytest.raises(RequestFailed) as raised:
            await exchange(request)
        await exchange.aclose()
        return raised.value

    failed = run(main)
    assert isinstance(failed.inner, NotSent) and "no TLS context" in str(failed.inner)
