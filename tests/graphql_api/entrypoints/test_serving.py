"""How uvicorn serves the app (graphql_api/entrypoints/serving.py): httptools on uvloop by default, h11 on
asyncio's loop when chosen, each behind the header-timeout protocol (test_slow_clients.py)."""

from __future__ import annotations

import asyncio
import importlib
import socket
import subprocess
import sys
import time
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send

from datastore.config import ConfigError
from graphql_api.app import create_app
from graphql_api.entrypoints.serving import uvicorn_options, worker_options
from graphql_api.entrypoints.websocket_protocol import WEBSOCKET_PROTOCOL, GoingAwayProtocol
from graphql_api.limits.protocols import GuardedH11Protocol, GuardedHttpToolsProtocol
from graphql_api.settings import child_environment
from graphql_api.settings.api import HTTP_IMPLEMENTATIONS, ApiSettings, HttpImplementation
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings

BASE = {"HR_ENV": "test", "JWT_SECRET": "x" * 40}


def test_settings__http_implementation__httptools_by_default_h11_selectable() -> None:
    assert ApiSettings.from_env(BASE).http_implementation == "httptools"
    assert ApiSettings.from_env({**BASE, "HTTP_IMPLEMENTATION": "H11"}).http_implementation == "h11"
    with pytest.raises(ConfigError, match="HTTP_IMPLEMENTATION"):
        ApiSettings.from_env({**BASE, "HTTP_IMPLEMENTATION": "hyper"})


def test_options__each_implementation__its_guarded_protocol_and_loop() -> None:
    env = {**BASE, "HEADER_TIMEOUT_SECONDS": "7", "MAX_HEAD_BYTES": "20000", "MAX_HEADERS": "50"}
    httptools = ApiSettings.from_env(env)
    options = uvicorn_options(httptools)
    protocol = options["http"]
    assert issubclass(protocol, GuardedHttpToolsProtocol)
    assert (protocol.header_timeout_seconds, protocol.max_head_bytes, protocol.max_headers) == (7, 20000, 50)
    assert options["loop"] == "uvloop"
    h11 = ApiSettings.from_env({**env, "HTTP_IMPLEMENTATION": "h11"})
    assert issubclass(uvicorn_options(h11)["http"], GuardedH11Protocol)
    assert uvicorn_options(h11)["loop"] == "asyncio"
    # h11's own bound on a head is no lower than ours, so ours answers (431, coded).
    assert uvicorn_options(h11)["h11_max_incomplete_event_size"] == 20000
    assert (
        worker_options(httptools)["http"]
        == worker_options(h11)["http"]
        == "graphql_api.entrypoints.worker_protocol:Protocol"
    )


def test_options__websockets__bounded_like_a_body__our_close_at_shutdown() -> None:
    settings = ApiSettings.from_env({**BASE, "MAX_BODY_BYTES": "20000"})
    for options in (uvicorn_options(settings), worker_options(settings)):
        assert options["ws_max_size"] == 20000  # uvicorn's own default is 16 MiB
        assert options["ws"] == WEBSOCKET_PROTOCOL
    module, name = WEBSOCKET_PROTOCOL.split(":")
    assert getattr(importlib.import_module(module), name) is GoingAwayProtocol


@pytest.mark.parametrize("implementation", HTTP_IMPLEMENTATIONS)
def test_worker_protocol__imported_by_a_worker__built_from_the_settings_it_loads(
    implementation: HttpImplementation,
) -> None:
    """A spawned worker imports its protocol by path: a fresh interpreter shows what it gets."""
    env = {
        **child_environment(BASE),
        "HTTP_IMPLEMENTATION": implementation,
        "MAX_HEAD_BYTES": "20000",
        "MAX_HEADERS": "50",
        "HEADER_TIMEOUT_SECONDS": "7",
    }
    module, name = worker_options(ApiSettings.from_env(env))["http"].split(":")
    program = (
        f"import {module} as m; p = m.{name}; "
        "print(p.__mro__[1].__name__, p.max_head_bytes, p.max_headers, p.header_timeout_seconds)"
    )
    result = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True)
    base = {"httptools": GuardedHttpToolsProtocol, "h11": GuardedH11Protocol}[implementation]
    assert result.stdout.split() == [base.__name__, "20000", "50", "7"]


@pytest.mark.parametrize(("implementation", "loop_module"), [("httptools", "uvloop"), ("h11", "asyncio")])
def test_served__each_implementation__answers_on_its_loop(
    new_datastore: DatastoreFactory,
    table_name: str,
    api: Api,
    api_settings: ApiSettings,
    tenant: Tenant,
    implementation: HttpImplementation,
    loop_module: str,
) -> None:
    assert implementation in HTTP_IMPLEMENTATIONS
    settings = with_settings(api_settings, http_implementation=implementation)
    product = create_app(new_datastore(table_name), settings)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/loop":  # which loop runs the server
            body = type(asyncio.get_running_loop()).__module__.encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": body})
            return
        await product(scope, receive, send)

    options: dict[str, Any] = uvicorn_options(settings)
    with serving(app, **options) as http:  # type: ignore[arg-type]  # an ASGI app, as Starlette's is
        assert http.get("/loop").text.split(".")[0] == loop_module
        response = http.post(
            "/graphql",
            json={"query": "{ me { email } }"},
            headers={"Authorization": f"Bearer {api.token(tenant.admin)}"},
        )
    assert response.json()["data"] == {"me": {"email": tenant.admin.email}}


def test_served__idle_keep_alive__outlasts_common_clients_reuse(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    """A connection idle for longer than uvicorn's default 5 s (Node's fetch reuses one idle for
    up to 4 s, browsers longer) is still open for the next request: the server does not close
    it under a client that is about to write."""
    product = create_app(new_datastore(table_name), api_settings)
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with serving(product, **uvicorn_options(api_settings)) as http:
        host, port = http.base_url.host, http.base_url.port
        assert port is not None
        with socket.create_connection((host, port), timeout=10) as connection:
            connection.sendall(request)
            assert _response(connection).startswith(b"HTTP/1.1 200")
            time.sleep(6.5)
            connection.sendall(request)
            assert _response(connection).startswith(b"HTTP/1.1 200")


def _response(connection: socket.socket) -> bytes:
    """One whole response (its head and its Content-Length body); b"" when the server closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(4096)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = connection.recv(4096)
        if not chunk:
            break
        body += chunk
    return data
