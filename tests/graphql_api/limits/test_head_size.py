"""Bounded request heads (limits/head_size.py): over the bound, 431 with a coded body, on each parser.

The bounds are checked at their edge on an app served in this process with our protocol (a
head of exactly MAX_HEAD_BYTES passes, one byte more is refused; likewise MAX_HEADERS). Then
the attack as it was found: a 64 MB header sent to ``server.py run`` (a process of its own)
on each parser while a client times ``{ me { email } }``; both timings are printed (no timed
assertion), and the 431, its body and the server's answers meanwhile are asserted.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from datastore.dev.local import free_port
from graphql_api.app import create_app
from graphql_api.entrypoints.serving import uvicorn_options
from graphql_api.limits.head_size import DEFAULT_MAX_HEAD_BYTES
from graphql_api.settings.api import HTTP_IMPLEMENTATIONS, ApiSettings, HttpImplementation
from tests import server_process
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import TEST_SECRET, Api
from tests.graphql_api.live import serving, with_settings

BOUND = 4096
HEADERS = 20
ME = "{ me { email } }"
HUGE = 64 * 1024 * 1024
ROUNDS = 5


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    answered_after: float  # seconds from connecting to the answer's first byte
    sent: int  # bytes the client managed to send before the server closed
    sending: float  # seconds the client spent sending them


def exchange(port: int, request: bytes, *, chunk: int = 1 << 20) -> Answer:
    """Send all of ``request`` on a fresh socket, as an attacker would whatever the answer, while
    reading the answer until the server closes (the requests here say ``Connection: close``)."""
    started = time.monotonic()
    answered: list[float] = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        received: list[bytes] = []

        def read() -> None:
            while True:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                if not answered:
                    answered.append(time.monotonic() - started)
                received.append(data)

        reader = threading.Thread(target=read, name="head-size-reader")
        reader.start()
        sent = 0
        try:
            view = memoryview(request)
            while sent < len(request):
                sent += sock.send(view[sent : sent + chunk])
        except OSError:
            pass  # the server closed while we were still writing: its answer came first
        sending = time.monotonic() - started
        reader.join(timeout=30)
    raw = b"".join(received)
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (field.partition(":") for field in fields)}
    return Answer(int(status_line.split()[1]), headers, body, answered[0], sent, sending)


def get(path: str, size: int | None = None, fields: int = 2) -> bytes:
    """A GET of ``path`` with ``fields`` header fields (Host, Connection and more), its head
    padded by one more to exactly ``size`` bytes when given."""
    start = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n".encode()
    extra = b"".join(f"X-Field-{i}: {i}\r\n".encode() for i in range(fields - 2))
    if size is None:
        return start + extra + b"\r\n"
    padding = size - len(start) - len(extra) - len(b"X-Pad: \r\n\r\n")
    assert padding >= 0
    return start + extra + b"X-Pad: " + b"a" * padding + b"\r\n\r\n"


def assert_refused(answer: Answer, limit: str, bound: int) -> None:
    assert answer.status == 431, answer
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["connection"] == "close"
    [error] = orjson.loads(answer.body)["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["extensions"]["limit"] == limit
    assert error["extensions"]["maxBytes" if limit == "headBytes" else "maxHeaders"] == bound


@contextmanager
def bounded(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, implementation: HttpImplementation
) -> Iterator[httpx.Client]:
    settings = with_settings(
        api_settings, max_head_bytes=BOUND, max_headers=HEADERS, http_implementation=implementation
    )
    options: dict[str, Any] = uvicorn_options(settings)
    with serving(create_app(new_datastore(table_name), settings), **options) as http:
        yield http


def port_of(http: httpx.Client) -> int:
    port = http.base_url.port
    assert port is not None
    return port


@pytest.mark.parametrize("implementation", HTTP_IMPLEMENTATIONS)
def test_head__at_the_bound__served__one_byte_more__431(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, implementation: HttpImplementation
) -> None:
    with bounded(new_datastore, table_name, api_settings, implementation) as http:
        port = port_of(http)
        assert exchange(port, get("/healthz", BOUND)).status == 200
        refused = exchange(port, get("/healthz", BOUND + 1))
        assert_refused(refused, "headBytes", BOUND)
        # Many times the bound: refused the same way, the rest of what the client sent dropped.
        assert_refused(exchange(port, get("/healthz", 50 * BOUND)), "headBytes", BOUND)
        # The request line counts: a GET whose query string alone is past the bound.
        assert_refused(exchange(port, get("/graphql?query=" + "x" * BOUND)), "headBytes", BOUND)
        assert http.get("/healthz").status_code == 200


@pytest.mark.parametrize("implementation", HTTP_IMPLEMENTATIONS)
def test_header_count__at_the_bound__served__one_more__431(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, implementation: HttpImplementation
) -> None:
    with bounded(new_datastore, table_name, api_settings, implementation) as http:
        port = port_of(http)
        assert exchange(port, get("/healthz", fields=HEADERS)).status == 200
        assert_refused(exchange(port, get("/healthz", fields=HEADERS + 1)), "headerCount", HEADERS)


@pytest.mark.parametrize("implementation", HTTP_IMPLEMENTATIONS)
def test_body__larger_than_the_head_bound_in_one_write__not_counted(
    new_datastore: DatastoreFactory,
    table_name: str,
    api_settings: ApiSettings,
    api: Api,
    tenant: Tenant,
    implementation: HttpImplementation,
) -> None:
    with bounded(new_datastore, table_name, api_settings, implementation) as http:
        body = orjson.dumps({"query": ME + " " * (5 * BOUND)})
        request = (
            b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {api.token(tenant.admin)}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        answer = exchange(port_of(http), request)
    assert answer.status == 200, answer
    assert b'"email"' in answer.body


@pytest.mark.parametrize("implementation", HTTP_IMPLEMENTATIONS)
def test_head__second_request_on_a_kept_alive_connection__bounded_too(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, implementation: HttpImplementation
) -> None:
    with bounded(new_datastore, table_name, api_settings, implementation) as http:
        with socket.create_connection(("127.0.0.1", port_of(http)), timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # kept alive
            first = b""
            while not first.endswith(b'{"status":"ok"}'):
                first += sock.recv(65536)
            assert first.startswith(b"HTTP/1.1 200"), first
            sock.sendall(get("/healthz", 2 * BOUND))
            second = b""
            while chunk := sock.recv(65536):
                second += chunk
        assert second.startswith(b"HTTP/1.1 431"), second


def test_settings__head_bounds__documented_defaults() -> None:
    settings = ApiSettings.from_env({})
    assert settings.max_head_bytes == DEFAULT_MAX_HEAD_BYTES == 32 * 1024
    assert settings.max_headers == 100
    assert ApiSettings.from_env({"MAX_HEAD_BYTES": "16384", "MAX_HEADERS": "50"}).max_head_bytes == 16384


# --- the attack as it was found: a 64 MB header beside a normal client -------------------


def latencies(http: httpx.Client, token: str, least: int, busy: threading.Thread | None = None) -> list[float]:
    """``{ me { email } }`` timed, one after another: ``least`` of them, and more while ``busy`` runs."""
    out: list[float] = []
    while len(out) < least or (busy is not None and busy.is_alive()):
        started = time.perf_counter()
        response = http.post("/graphql", json={"query": ME}, headers={"Authorization": f"Bearer {token}"})
        out.append(time.perf_counter() - started)
        assert response.status_code == 200 and "errors" not in response.json(), response.text
    return out


@pytest.mark.parametrize("implementation", HTTP_IMPLEMENTATIONS)
def test_64_mb_header__server_process__431_at_once_and_others_served(
    dynamodb_endpoint: str,
    streamed_table_name: str,
    api: Api,
    streamed_tenant: Tenant,
    implementation: HttpImplementation,
) -> None:
    # On the session's streamed table: ``server.py run`` turns its table's stream on at start.
    tenant = streamed_tenant
    env = {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": streamed_table_name,
        "HR_ENV": "test",
        "ALLOWED_HOSTS": "127.0.0.1",
        "JWT_SECRET": TEST_SECRET,
        "HTTP_IMPLEMENTATION": implementation,
        "WORKERS": "1",
        "METRICS_PORT": "",
    }
    token = api.token(tenant.admin)
    with server_process.running(env, free_port()) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        latencies(http, token, 5)  # warm up
        alone = latencies(http, token, 30)

        answers: list[Answer] = []
        request = b"GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Huge: " + b"a" * HUGE + b"\r\n\r\n"

        def attack() -> None:
            for _ in range(ROUNDS):
                answers.append(exchange(server.port, request))

        attacker = threading.Thread(target=attack, name="64mb-headers")
        attacker.start()
        beside = latencies(http, token, 1, attacker)
        attacker.join(timeout=120)
        after = latencies(http, token, 5)

    assert len(answers) == ROUNDS
    for answer in answers:
        assert_refused(answer, "headBytes", DEFAULT_MAX_HEAD_BYTES)
    median_alone, median_beside = statistics.median(alone) * 1000, statistics.median(beside) * 1000
    answered = sorted(answer.answered_after * 1000 for answer in answers)
    sending = sorted(answer.sending * 1000 for answer in answers)
    sent = sorted(answer.sent / 2**20 for answer in answers)
    print(
        f"\n{implementation}: {ROUNDS} requests with a 64 MB header, one after another: each answered 431 "
        f"after {answered[0]:.0f}-{answered[-1]:.0f} ms, while the client went on sending, "
        f"{sent[0]:.0f}-{sent[-1]:.0f} MB in {sending[0]:.0f}-{sending[-1]:.0f} ms (read and dropped by the server); "
        f"`{{ me {{ email }} }}` meanwhile: median {median_beside:.1f} ms, max {max(beside) * 1000:.1f} ms "
        f"over {len(beside)}; alone: median {median_alone:.1f} ms, max {max(alone) * 1000:.1f} ms"
    )
    assert len(after) == 5  # and every request beside and after them was answered 200 with its data
