"""DynamoDB through an HTTP proxy (datastore/proxy.py, the tunnel in datastore/aws/connections.py).

The reads go from ``DatastoreSettings`` parsed from the standard variables, through
``Datastore.connect(...).table(scope)``, a real CONNECT proxy on the loopback
(tests/datastore/connect_proxy.py) and, for https, a TLS front, to DynamoDB Local; each test
on asyncio's loop and on uvloop, which the servers run.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
import uvloop
from yarl import URL

from datastore.aws.client import AsyncDynamo, Mirror, send
from datastore.config import ConfigError, DatastoreSettings
from datastore.errors import Unavailable
from datastore.kinds import layout
from datastore.proxy import Proxies, Proxy, proxy_variables
from datastore.table.store import Datastore
from datastore.values import ids
from tests import blocking
from tests.certificates import self_signed
from tests.conftest import Tenant
from tests.datastore.connect_proxy import ConnectProxy, connect_proxy, tls_front
from tests.datastore.loopback import Server, serving

T = TypeVar("T")
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}
# Userinfo with characters a URL must escape: the proxy is sent them decoded.
USER, PASSWORD = "hr@api", "p:ss w0rd"
USERINFO = "hr%40api:p%3Ass%20w0rd"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
# Nothing listens on port 1: a proxy there is never reached.
DEAD_PROXY = "http://127.0.0.1:1"


@pytest.fixture(params=list(LOOPS))
def loop_factory(request: pytest.FixtureRequest) -> Callable[[], asyncio.AbstractEventLoop]:
    return LOOPS[request.param]


def run(loop_factory: Callable[[], asyncio.AbstractEventLoop], main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(20):
            return await main()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(bounded())


def datastore_with(settings: DatastoreSettings, env: dict[str, str], endpoint: str) -> Datastore:
    """The process's datastore as the server makes it, its proxies read from ``env``."""
    proxied = replace(DatastoreSettings.from_env(env), table_name=settings.table_name, endpoint_url=endpoint)
    return Datastore.connect(proxied)


async def read_twice(datastore: Datastore, tenant: Tenant) -> list[Any]:
    """The tenant's admin read twice on the event loop: the second on the kept-alive connection."""
    key = layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)
    table = datastore.table(tenant.table.scope)
    try:
        return [await table.get(key), await table.get(key)]
    finally:
        await datastore.aclose()
        datastore.close()


def admin_item(tenant: Tenant) -> Any:
    return blocking.run(tenant.table.get(layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)))


def local_port(dynamodb_endpoint: str) -> int:
    port = urlsplit(dynamodb_endpoint).port
    assert port is not None
    return port


@pytest.fixture
def certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ssl.SSLContext]:
    """A TLS server context with a test certificate the clients trust (AWS_CA_BUNDLE, what
    botocore and so both DynamoDB clients verify with)."""
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("AWS_CA_BUNDLE", str(cert))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    yield server


def test_https_proxy__https_endpoint__a_tunnel_with_the_credentials_tls_inside_the_answer_right(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
    certificate: ssl.SSLContext,
    settings: DatastoreSettings,
    dynamodb_endpoint: str,
    tenant: Tenant,
) -> None:
    async def main() -> tuple[list[Any], ConnectProxy, int]:
        async with (
            connect_proxy(authorization=BASIC) as proxy,
            tls_front(local_port(dynamodb_endpoint), certificate) as front,
        ):
            env = {"HTTPS_PROXY": f"http://{USERINFO}@127.0.0.1:{proxy.port}", "HTTP_PROXY": DEAD_PROXY}
            read = await read_twice(datastore_with(settings, env, f"https://127.0.0.1:{front}"), tenant)
            return read, proxy, front

    read, proxy, front = run(loop_factory, main)

    assert read == [admin_item(tenant)] * 2
    # One connection, kept alive for the second read, through one tunnel to the TLS endpoint.
    assert proxy.tunnels == [f"127.0.0.1:{front}"]
    assert proxy.authorizations == [BASIC]


def test_http_proxy__http_endpoint__tunnelled_through_http_proxy_not_https_proxy(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
    settings: DatastoreSettings,
    dynamodb_endpoint: str,
    tenant: Tenant,
) -> None:
    async def main() -> tuple[list[Any], ConnectProxy]:
        async with connect_proxy() as proxy:
            # lowercase wins, as every HTTP client reads these.
            env = {"http_proxy": f"127.0.0.1:{proxy.port}", "HTTP_PROXY": DEAD_PROXY, "HTTPS_PROXY": DEAD_PROXY}
            return await read_twice(datastore_with(settings, env, dynamodb_endpoint), tenant), proxy

    read, proxy = run(loop_factory, main)

    assert read == [admin_item(tenant)] * 2
    assert proxy.tunnels == [f"127.0.0.1:{local_port(dynamodb_endpoint)}"]
    assert proxy.authorizations == [None]


@pytest.mark.parametrize(
    ("no_proxy", "tunnels"),
    [
        ("localhost,127.0.0.1", 0),
        ("*", 0),
        (" .example.com , 127.0.0.1:{port}", 0),
        ("127.0.0.2,.example.com,127.0.0.1:1", 1),
    ],
)
def test_no_proxy__matching_the_endpoint__straight_there_else_tunnelled(
    no_proxy: str,
    tunnels: int,
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
    settings: DatastoreSettings,
    dynamodb_endpoint: str,
    tenant: Tenant,
) -> None:
    async def main() -> tuple[list[Any], ConnectProxy]:
        async with connect_proxy() as proxy:
            env = {
                "HTTP_PROXY": f"http://127.0.0.1:{proxy.port}",
                "NO_PROXY": no_proxy.format(port=local_port(dynamodb_endpoint)),
            }
            return await read_twice(datastore_with(settings, env, dynamodb_endpoint), tenant), proxy

    read, proxy = run(loop_factory, main)

    assert read == [admin_item(tenant)] * 2
    assert len(proxy.tunnels) == len(proxy.asked) == tunnels


@pytest.mark.parametrize(
    ("proxy_options", "userinfo", "status"),
    [
        ({"authorization": BASIC}, "", 407),  # no credentials given
        ({"authorization": BASIC}, "hr%40api:wrong-secret@", 407),
        ({"refuse": 403}, "hr%40api:wrong-secret@", 403),
        ({"refuse": 502}, "", 502),
    ],
)
def test_proxy_refuses__unavailable_not_sent_its_status_never_the_credentials(
    proxy_options: dict[str, Any],
    userinfo: str,
    status: int,
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
    settings: DatastoreSettings,
    dynamodb_endpoint: str,
    tenant: Tenant,
) -> None:
    async def main() -> tuple[Unavailable, ConnectProxy]:
        async with connect_proxy(**proxy_options) as proxy:
            env = {"HTTP_PROXY": f"http://{userinfo}127.0.0.1:{proxy.port}"}
            datastore = datastore_with(settings, env, dynamodb_endpoint)
            with pytest.raises(Unavailable) as raised:
                await read_twice(datastore, tenant)
            return raised.value, proxy

    error, proxy = run(loop_factory, main)

    assert str(error) == "DynamoDB could not be reached" and not error.maybe_written
    cause = error.cause or ""
    local = local_port(dynamodb_endpoint)
    assert (
        cause == f"NotSent: the proxy at 127.0.0.1:{proxy.port} refused the tunnel to 127.0.0.1:{local}: HTTP {status}"
    )
    assert "wrong-secret" not in cause and USER not in cause and "hr%40api" not in cause
    # Asked once per attempt, and never let through: nothing reached DynamoDB.
    assert len(proxy.asked) == settings.max_attempts and proxy.tunnels == []


def test_https_through_the_proxy__a_certificate_not_trusted__not_sent(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
    settings: DatastoreSettings,
    dynamodb_endpoint: str,
    tenant: Tenant,
    tmp_path: Path,
) -> None:
    """TLS inside the tunnel is the endpoint's, checked against the clients' bundle: the
    proxy's tunnel alone earns no trust."""
    cert, key = self_signed(tmp_path)  # in no bundle the clients read
    untrusted = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    untrusted.load_cert_chain(cert, key)

    async def main() -> tuple[Unavailable, ConnectProxy]:
        async with connect_proxy() as proxy, tls_front(local_port(dynamodb_endpoint), untrusted) as front:
            env = {"HTTPS_PROXY": f"http://127.0.0.1:{proxy.port}"}
            with pytest.raises(Unavailable) as raised:
                await read_twice(datastore_with(settings, env, f"https://127.0.0.1:{front}"), tenant)
            return raised.value, proxy

    error, proxy = run(loop_factory, main)

    cause = error.cause or ""
    assert cause.startswith(f"NotSent: through the proxy at 127.0.0.1:{proxy.port}: ")
    assert "CERTIFICATE_VERIFY_FAILED" in cause
    assert len(proxy.tunnels) == settings.max_attempts


def test_proxy_misbehaves__closes_garbles_or_talks_first__not_sent(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    """Each a proxy answering CONNECT as no proxy should: nothing is sent through it."""
    answers = {
        b"": "closed the connection before answering CONNECT",
        b"SSH-2.0-OpenSSH\r\n\r\n": "something other than HTTP/1.x",
        b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 200 OK\r\n": "sent bytes after its 200",
        b"HTTP/1.1 200 OK\r\n": "within the connect timeout (0.5 s)",  # the head never ends
    }

    def script(raw: bytes) -> Any:
        async def answer(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            server.requests.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(raw)
            await writer.drain()
            if raw:
                await reader.read()

        return answer

    async def main() -> list[tuple[str, str, int]]:
        found = []
        for raw, expected in answers.items():
            async with serving(script(raw)) as (server, port):
                proxies = Proxies(http=Proxy("127.0.0.1", port))
                mirror = Mirror(URL("http://127.0.0.1:9"), "eu-west-1", 0.5, 0.5, 1, 4, proxies=proxies)
                dynamo = AsyncDynamo(mirror, None)
                key = layout.EMPLOYEE.key_at(ids.new_id(), ids.new_id()).wire()
                try:
                    await send(dynamo.client(), "GetItem", {"TableName": "t", "Key": key})
                except Unavailable as error:
                    found.append((error.cause or "", expected, len(server.requests)))
                finally:
                    await dynamo.aclose()
        return found

    for cause, expected, asked in run(loop_factory, main):
        assert cause.startswith("NotSent: ") and expected in cause
        assert asked == 1


# --- the settings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"HTTPS_PROXY": "http://a:3128", "NO_PROXY": "x.example"},
        {"HTTPS_PROXY": "http://a:3128", "https_proxy": "http://b:3128"},
        {"HTTPS_PROXY": "http://a:3128", "https_proxy": ""},
        {"Https_Proxy": "http://a:3128", "no_proxy": "*"},
        {"HTTP_PROXY": "http://a:3128", "REQUEST_METHOD": "GET"},
        {"http_proxy": "http://a:3128", "REQUEST_METHOD": "GET"},
        {"HTTPS_PROXY": "", "FTP_PROXY": "http://f"},
    ],
)
def test_proxy_variables__read_as_urllib_reads_the_process_environment(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in urllib.request.os.environ if name.lower().endswith("_proxy")]:  # type: ignore[attr-defined]
        monkeypatch.delenv(name)
    monkeypatch.delenv("REQUEST_METHOD", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    assert proxy_variables(env) == urllib.request.getproxies_environment()


def test_settings__standard_variables__proxies_parsed_credentials_never_printed() -> None:
    settings = DatastoreSettings.from_env(
        {
            "HTTPS_PROXY": f"http://{USERINFO}@proxy.internal:3128",
            "http_proxy": "proxy.internal",
            "NO_PROXY": "localhost",
        }
    )

    assert settings.proxies == Proxies(
        https=Proxy("proxy.internal", 3128, BASIC), http=Proxy("proxy.internal", 80), no_proxy="localhost"
    )
    assert PASSWORD not in repr(settings) and "p%3Ass" not in repr(settings) and BASIC not in repr(settings)
    assert DatastoreSettings.from_env({}).proxies == Proxies()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"HTTPS_PROXY": "socks5://u:secret@p:1080"}, "HTTPS_PROXY names a socks5:// proxy; only http:// proxies"),
        ({"https_proxy": "https://u:secret@p:3128"}, "HTTPS_PROXY names a https:// proxy; only http:// proxies"),
        ({"HTTP_PROXY": "http://u:secret@p:port"}, "HTTP_PROXY is not a proxy URL"),
        ({"HTTP_PROXY": "http://u:secret@:3128"}, "HTTP_PROXY names no proxy host"),
    ],
)
def test_settings__unusable_proxy__config_error_naming_the_variable_not_the_secret(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        DatastoreSettings.from_env(env)

    assert str(raised.value).startswith(message)
    assert "secret" not in str(raised.value)
