"""Slow clients: dribbled request heads and bodies are dropped within their bound.

500 raw sockets (half dribbling a request head, half a body, one byte every half second)
are held open against a server with 3-second bounds, while a normal client keeps asking
for ``me``. The latency with and without them is printed (no timed assertion); what is
asserted is that the server closes every slow connection itself, within the bound plus
slack, and that a slow body is answered 408 with a coded error first.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import orjson
import pytest

from graphql_api.app import create_app
from graphql_api.limits.protocols import configured
from graphql_api.settings.api import HTTP_IMPLEMENTATIONS, ApiSettings, HttpImplementation
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings

BOUND = 3.0  # seconds, for both the head and the body
SLACK = 10.0  # a loaded 2-core machine; the property is "closed by the server", not the speed
SLOW = 250  # of each kind
DRIP = 0.5  # seconds between bytes
ME = "{ me { email firstName department { name } } }"


@dataclass
class Outcome:
    kind: str
    closed_after: float | None = None  # seconds from the start of the slow part to EOF
    received: bytes = b""
    # Reset rather than closed: a byte this client dripped met the server's close, and the
    # reset discards what the kernel had not handed over yet (the 408's body, say).
    reset: bool = False


async def dribble(port: int, kind: str, opened: Callable[[], None], give_up: float) -> Outcome:
    outcome = Outcome(kind)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if kind == "head":
        writer.write(b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    else:
        writer.write(
            b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 10000\r\n\r\n"
        )
    await writer.drain()
    started = time.monotonic()
    opened()
    try:
        while time.monotonic() - started < give_up:
            try:
                chunk = await asyncio.wait_for(reader.read(65536), DRIP)
            except TimeoutError:
                writer.write(b"a")  # the next byte of the head or the body
                await writer.drain()
                continue
            if not chunk:
                outcome.closed_after = time.monotonic() - started
                break
            outcome.received += chunk
    except (ConnectionError, OSError):
        outcome.closed_after = time.monotonic() - started  # reset by the server: closed too
        outcome.reset = True
    finally:
        writer.close()
    return outcome


def latencies(http: httpx.Client, token: str, count: int) -> list[float]:
    out = []
    for _ in range(count):
        started = time.perf_counter()
        response = http.post("/graphql", json={"query": ME}, headers={"Authorization": f"Bearer {token}"})
        out.append(time.perf_counter() - started)
        assert response.status_code == 200 and "errors" not in response.json(), response.text
    return out


@pytest.mark.parametrize("implementation", HTTP_IMPLEMENTATIONS)
def test_slow_clients__500_dribbling__closed_within_the_bound_and_others_served(
    new_datastore: DatastoreFactory,
    table_name: str,
    api: Api,
    api_settings: ApiSettings,
    tenant: Tenant,
    implementation: HttpImplementation,
) -> None:
    settings = with_settings(
        api_settings, header_timeout_seconds=BOUND, body_timeout_seconds=BOUND, http_implementation=implementation
    )
    app = create_app(new_datastore(table_name), settings)
    token = api.token(tenant.admin)
    protocol = configured(settings)
    with serving(app, http=protocol, timeout_keep_alive=30) as http:
        port = http.base_url.port
        assert port is not None
        latencies(http, token, 5)  # warm up
        alone = latencies(http, token, 30)

        opened = threading.Semaphore(0)
        results: list[Outcome] = []

        def run_slow_clients() -> None:
            async def main() -> list[Outcome]:
                kinds = ["head"] * SLOW + ["body"] * SLOW
                return list(await asyncio.gather(*(dribble(port, k, opened.release, BOUND + SLACK) for k in kinds)))

            results.extend(asyncio.run(main()))

        slow = threading.Thread(target=run_slow_clients, name="slow-clients")
        slow.start()
        for _ in range(2 * SLOW):
            assert opened.acquire(timeout=30), "could not open the slow connections"
        under_load = latencies(http, token, 30)
        slow.join(timeout=BOUND + SLACK + 30)
        assert not slow.is_alive()

    median_alone, median_loaded = statistics.median(alone) * 1000, statistics.median(under_load) * 1000
    closed = [o.closed_after for o in results if o.closed_after is not None]
    print(
        f"\n`me` latency, median of 30: {median_alone:.1f} ms alone, {median_loaded:.1f} ms with "
        f"{2 * SLOW} slow connections open ({median_loaded - median_alone:+.1f} ms, "
        f"x{median_loaded / median_alone:.2f}); max {max(alone) * 1000:.1f} vs {max(under_load) * 1000:.1f} ms"
    )
    if closed:
        print(f"slow connections closed by the server after {min(closed):.1f}-{max(closed):.1f} s (bound {BOUND} s)")

    assert len(results) == 2 * SLOW
    still_open = [o.kind for o in results if o.closed_after is None]
    assert not still_open, f"{len(still_open)} slow connections were never closed by the server"
    for outcome in results:
        assert outcome.closed_after is not None and outcome.closed_after <= BOUND + SLACK
        if outcome.kind == "body":
            head, _, body = outcome.received.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408 "), outcome.received[:200]
            if body or not outcome.reset:
                assert orjson.loads(body)["errors"][0]["extensions"]["limit"] == "bodyTimeout"
        else:
            assert outcome.received == b""  # a head never finished gets no response, only the close
