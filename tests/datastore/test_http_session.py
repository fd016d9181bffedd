"""The DynamoDB client's libcurl transport: the bytes botocore prepared go out unchanged, the
answer comes back as botocore reads it, and every way an exchange fails raises the botocore
exception urllib3's session would have raised (retries and datastore.table's translation
depend on which)."""

from __future__ import annotations

import gc
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
    SSLError,
)

from datastore import ids, keys, library_internals
from datastore.client import make_client
from datastore.config import DatastoreSettings
from datastore.dev.local import free_port
from datastore.http_session import CurlSession, _header_lines, _parse_headers
from tests.certificates import self_signed

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

EMPTY_GET_ITEM = b"{}"  # a GetItem that found nothing


@dataclass
class Exchange:
    """One request as the server read it off the socket."""

    head: bytes
    body: bytes

    def headers(self) -> dict[str, str]:
        return _parse_headers(b"HTTP/1.1 200 OK\r\n" + self.head.split(b"\r\n", 1)[1])


@dataclass
class FakeDynamoDB:
    """A loopback HTTP/1.1 server that answers every request by ``reply`` (bytes to send, or
    None to hang up after reading it, or "silent" to read it and never answer)."""

    reply: Callable[[int], bytes | str | None]
    tls: ssl.SSLContext | None = None
    # Hang up after each answer, without saying so (no "Connection: close"), as a server
    # or load balancer does with a connection it has kept idle too long.
    close_after_answer: bool = False
    seen: list[Exchange] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    listener: socket.socket | None = None  # set while serving

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def serve(self, listener: socket.socket, stop: threading.Event) -> None:
        listener.settimeout(0.05)  # a closed listener does not wake accept(): look at ``stop`` often
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn, stop), daemon=True).start()

    def _connection(self, conn: socket.socket, stop: threading.Event) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            buffer = b""
            while not stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                length = int(Exchange(head, b"").headers().get("content-length", "0"))
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                self.seen.append(Exchange(head, buffer[:length]))
                buffer = buffer[length:]
                answer = self.reply(len(self.seen))
                if answer is None:
                    return
                if answer == "silent":
                    stop.wait(30)
                    return
                assert isinstance(answer, bytes)
                conn.sendall(answer)
                if self.close_after_answer:
                    return
        except (OSError, ssl.SSLError):
            return
        finally:
            conn.close()


@contextmanager
def serving(fake: FakeDynamoDB) -> Iterator[FakeDynamoDB]:
    stop = threading.Event()
    listener = fake.listener = socket.create_server(("127.0.0.1", fake.port))
    thread = threading.Thread(target=fake.serve, args=(listener, stop), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def answer(status: int, body: bytes, *extra: str) -> bytes:
    head = [f"HTTP/1.1 {status} X", "Content-Type: application/x-amz-json-1.0", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def client_of(settings: DatastoreSettings, url: str, **changes: Any) -> DynamoDBClient:
    return make_client(replace(settings, **{"max_attempts": 1, "read_timeout": 0.5, **changes}), url)


def get_item(client: DynamoDBClient) -> dict[str, Any]:
    response: dict[str, Any] = client.get_item(TableName="hr-fake", Key=keys.Key("ORG#X", "META").wire())
    return response


def test_make_client__product_client__sends_through_curl_and_the_floor_through_urllib3(
    settings: DatastoreSettings,
) -> None:
    assert isinstance(library_internals.http_session(make_client(settings)), CurlSession)
    assert not isinstance(library_internals.http_session(make_client(settings, stock=True)), CurlSession)


def test_request__on_the_wire__is_exactly_what_botocore_prepared(settings: DatastoreSettings) -> None:
    prepared: dict[str, Any] = {}

    def capture(request: Any, **_: Any) -> None:
        prepared["headers"] = {name.lower(): _text(value) for name, value in request.headers.items()}
        prepared["body"] = request.body

    with serving(FakeDynamoDB(lambda _: answer(200, EMPTY_GET_ITEM))) as fake:
        client = client_of(settings, fake.url)
        client.meta.events.register("before-send.dynamodb.GetItem", capture)
        assert "Item" not in get_item(client)
    [exchange] = fake.seen
    assert exchange.head.startswith(b"POST / HTTP/1.1\r\n")
    # Host is the transport's to add, as http.client adds it under urllib3. Nothing else: no
    # Accept, no Expect: 100-continue, no second Content-Length or Content-Type of libcurl's own.
    assert exchange.headers() == {**prepared["headers"], "host": f"127.0.0.1:{fake.port}"}
    assert exchange.body == prepared["body"]


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def test_answer__status_headers_and_body__read_as_botocore_reads_urllib3s(settings: DatastoreSettings) -> None:
    item = {"Item": {"PK": {"S": "ORG#X"}, "SK": {"S": "META"}, "blob": {"B": "AAEC"}}}
    body = orjson.dumps(item)
    reply = answer(200, body, "x-amzn-RequestId: req-1", "X-Custom: a", "x-custom: b")
    with serving(FakeDynamoDB(lambda _: reply)) as fake:
        response = get_item(client_of(settings, fake.url))
    assert response["Item"]["blob"] == {"B": b"\x00\x01\x02"}
    assert response["ResponseMetadata"]["RequestId"] == "req-1"
    assert response["ResponseMetadata"]["HTTPHeaders"]["x-custom"] == "a, b"


def test_parse_headers__a_100_continue_block_first__the_final_blocks_fields() -> None:
    raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\n\r\n"
    assert _parse_headers(raw) == {"content-length": "2", "x-a": "1"}


def test_parse_headers__chunked_answer_with_trailers__the_status_lines_block() -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nx-amzn-RequestId: r\r\n\r\nX-Trailer: t\r\n\r\n"
    assert _parse_headers(raw) == {"transfer-encoding": "chunked", "x-amzn-requestid": "r"}


def test_header_lines__an_empty_value__sent_empty_not_dropped() -> None:
    # "Name:" alone tells libcurl to leave the header out, which would break a signed header.
    assert _header_lines({"X-Empty": "", "X-Bytes": b"v"}) == [b"X-Empty;", b"X-Bytes: v"]


def test_keep_alive__many_calls__one_connection_per_thread(settings: DatastoreSettings) -> None:
    connections: list[int] = []
    with serving(FakeDynamoDB(lambda n: answer(200, EMPTY_GET_ITEM))) as fake:
        client = client_of(settings, fake.url)
        original = fake._connection

        def counted(conn: socket.socket, stop: threading.Event) -> None:
            connections.append(1)
            original(conn, stop)

        fake._connection = counted  # type: ignore[method-assign]
        for _ in range(20):
            get_item(client)
    assert len(fake.seen) == 20
    assert len(connections) == 1


def test_keep_alive__server_dropped_the_idle_connection__next_call_reconnects(settings: DatastoreSettings) -> None:
    fake = FakeDynamoDB(lambda _: answer(200, EMPTY_GET_ITEM), close_after_answer=True)
    with serving(fake):
        client = client_of(settings, fake.url)  # one attempt: botocore's retry cannot hide a failure
        for _ in range(3):
            get_item(client)
            time.sleep(0.05)  # the server has closed its end
    assert len(fake.seen) == 3


def test_keep_alive__connection_died_with_the_request_on_it__resent_once_and_logged(
    settings: DatastoreSettings, caplog: pytest.LogCaptureFixture
) -> None:
    # The second request is read, then its kept-alive connection closes without an answer:
    # libcurl sends it again on a new connection, where botocore cannot see it.
    fake = FakeDynamoDB(lambda n: None if n == 2 else answer(200, EMPTY_GET_ITEM))
    with serving(fake), caplog.at_level(logging.WARNING, logger="hr.dynamodb"):
        client = client_of(settings, fake.url)
        get_item(client)
        get_item(client)
    assert len(fake.seen) == 3
    assert [r.getMessage() for r in caplog.records] == [
        "DynamoDB request DynamoDB_20120810.GetItem resent on a new connection: the kept-alive one died"
    ]


def test_error__request_sent_then_the_resend_refused__may_have_been_applied(settings: DatastoreSettings) -> None:
    fake = FakeDynamoDB(lambda n: answer(200, EMPTY_GET_ITEM))

    def read_then_stop_listening(n: int) -> bytes | None:
        if n == 1:
            return answer(200, EMPTY_GET_ITEM)
        assert fake.listener is not None
        fake.listener.shutdown(socket.SHUT_RDWR)  # libcurl's resend on a new connection is refused
        fake.listener.close()
        return None

    fake.reply = read_then_stop_listening
    with serving(fake):
        client = client_of(settings, fake.url)
        get_item(client)
        # Not EndpointConnectionError: that would say nothing reached DynamoDB, and a write
        # would be reported as certainly not applied.
        with pytest.raises(ConnectionClosedError):
            get_item(client)
    assert len(fake.seen) == 2


def test_threads__a_thread_that_ends__takes_its_handle_with_it(settings: DatastoreSettings) -> None:
    with serving(FakeDynamoDB(lambda _: answer(200, EMPTY_GET_ITEM))) as fake:
        client = client_of(settings, fake.url)
        session: CurlSession = library_internals.http_session(client)
        for _ in range(5):
            thread = threading.Thread(target=get_item, args=(client,))
            thread.start()
            thread.join()
        gc.collect()
        assert session.live_handles() == 0
        get_item(client)
        assert session.live_handles() == 1


def test_error__nothing_listening__endpoint_connection_error(settings: DatastoreSettings) -> None:
    client = client_of(settings, f"http://127.0.0.1:{free_port()}")
    with pytest.raises(EndpointConnectionError):
        get_item(client)


def test_error__request_read_and_never_answered__read_timeout_within_the_attempts_bound(
    settings: DatastoreSettings,
) -> None:
    with serving(FakeDynamoDB(lambda _: "silent")) as fake:
        client = client_of(settings, fake.url, connect_timeout=0.2, read_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(ReadTimeoutError):
            get_item(client)
        took = time.monotonic() - started
    assert len(fake.seen) == 1  # it was sent: a write may have been applied
    assert 0.3 <= took < 1.5


def test_error__connection_dropped_after_the_request__connection_closed_error(settings: DatastoreSettings) -> None:
    with serving(FakeDynamoDB(lambda _: None)) as fake, pytest.raises(ConnectionClosedError):
        get_item(client_of(settings, fake.url))
    assert fake.seen


def test_error__500_then_200__botocores_retry_sends_it_again(settings: DatastoreSettings) -> None:
    failure = orjson.dumps({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "boom"})
    replies = {1: answer(500, failure)}
    with serving(FakeDynamoDB(lambda n: replies.get(n, answer(200, EMPTY_GET_ITEM)))) as fake:
        response = get_item(client_of(settings, fake.url, max_attempts=2))
    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    assert len(fake.seen) == 2


def test_error__500_on_every_attempt__client_error_with_dynamodbs_code(settings: DatastoreSettings) -> None:
    failure = orjson.dumps({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "boom"})
    with serving(FakeDynamoDB(lambda _: answer(500, failure))) as fake, pytest.raises(ClientError) as raised:
        get_item(client_of(settings, fake.url, max_attempts=2))
    assert raised.value.response["Error"]["Code"] == "InternalServerError"
    assert len(fake.seen) == 2


def test_tls__certificate_checked_against_the_configured_bundle(
    settings: DatastoreSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    with serving(FakeDynamoDB(lambda _: answer(200, EMPTY_GET_ITEM), tls=tls)) as fake:
        monkeypatch.setenv("AWS_CA_BUNDLE", str(cert))  # botocore's own setting, read by make_client
        assert "Item" not in get_item(client_of(settings, fake.url))
        # botocore's default bundle does not hold a self-signed certificate: refused, nothing sent.
        monkeypatch.delenv("AWS_CA_BUNDLE")
        with pytest.raises(SSLError):
            get_item(client_of(settings, fake.url))
    assert len(fake.seen) == 1


def test_close__then_call__a_new_handle_serves_it(settings: DatastoreSettings) -> None:
    with serving(FakeDynamoDB(lambda _: answer(200, EMPTY_GET_ITEM))) as fake:
        client = client_of(settings, fake.url)
        get_item(client)
        library_internals.http_session(client).close()
        get_item(client)
    assert len(fake.seen) == 2


def test_threads__concurrent_calls_on_dynamodb_local__each_answer_its_own(
    client: DynamoDBClient, table_name: str
) -> None:
    org = f"ORG#{ids.new_id()}"
    for n in range(32):
        client.put_item(TableName=table_name, Item={"PK": {"S": org}, "SK": {"S": f"N#{n:02}"}, "n": {"N": str(n)}})

    def read(n: int) -> int:
        found = client.get_item(TableName=table_name, Key={"PK": {"S": org}, "SK": {"S": f"N#{n % 32:02}"}})
        return int(found["Item"]["n"]["N"])

    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(read, range(640))) == [n % 32 for n in range(640)]
