"""The bounded fetch of admin-supplied URLs: schemes, addresses, time and size (no traffic leaves the loopback)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from graphql_api.auth.discovery import check_issuer, read_document
from graphql_api.auth.outbound import FetchRefused, check_url, fetch_json, is_public


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # the cloud metadata service
        "100.64.0.1",  # carrier-grade NAT
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fe80::1%eth0",
        "fc00::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
    ],
)
def test_is_public__internal_addresses__false(address: str) -> None:
    assert not is_public(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"])
def test_is_public__public_addresses__true(address: str) -> None:
    assert is_public(address)


@pytest.mark.parametrize(
    ("url", "allow_http", "reason"),
    [
        ("http://idp.example", False, "must be an https:// URL"),
        ("file:///etc/passwd", True, "must be an https:// URL"),
        ("gopher://idp.example", True, "must be an https:// URL"),
        ("https://user:pw@idp.example", False, "user name or password"),
        ("https:///path", False, "names no host"),
        ("https://idp.example:99999", False, "is not a URL"),
    ],
)
def test_check_url__refused(url: str, allow_http: bool, reason: str) -> None:
    with pytest.raises(FetchRefused, match=reason):
        check_url(url, allow_http=allow_http)


@pytest.mark.parametrize(
    ("issuer", "reason"),
    [
        ("https://idp.example/?tenant=1", "no query or fragment"),
        ("https://idp.example/#x", "no query or fragment"),
        ("http://idp.example", "https"),
    ],
)
def test_check_issuer__outside_development__refused(issuer: str, reason: str) -> None:
    with pytest.raises(FetchRefused, match=reason):
        check_issuer(issuer, development=False)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class Quiet(BaseHTTPRequestHandler):
    hits = 0

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib names it `format`
        pass


class Document(Quiet):
    def do_GET(self) -> None:
        type(self).hits += 1
        body = b'{"issuer": "x"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_fetch__loopback_outside_development__refused_before_any_request() -> None:
    Document.hits = 0
    with serving(Document) as url:
        with pytest.raises(FetchRefused, match="https"):
            fetch_json(url, allow_private=False)
        # Even over https: the address is checked before connecting.
        with pytest.raises(FetchRefused, match=r"not public \(127\.0\.0\.1\)"):
            fetch_json(url.replace("http://", "https://"), allow_private=False)
        with pytest.raises(FetchRefused, match="not public"):
            fetch_json("https://localhost:1/x", allow_private=False)
    assert Document.hits == 0


def test_fetch__in_development__loopback_fetched() -> None:
    with serving(Document) as url:
        assert fetch_json(url, allow_private=True) == {"issuer": "x"}


class Huge(Quiet):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"[" + b"1," * 100_000 + b"1]")


class Slow(Quiet):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        for _ in range(40):  # a byte every 0.1 s: each read is quick, the whole is not
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(0.1)


class Redirect(Quiet):
    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
        self.end_headers()


class NotJson(Quiet):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"<html>")


@pytest.mark.parametrize(
    ("handler", "reason"),
    [
        (Huge, "more than 1024 bytes"),
        (Slow, "took longer than 1 s"),
        (Redirect, "HTTP 302, not 200"),
        (NotJson, "did not answer JSON"),
    ],
)
def test_fetch__bounded(handler: type[BaseHTTPRequestHandler], reason: str) -> None:
    with serving(handler) as url:
        started = time.monotonic()
        with pytest.raises(FetchRefused, match=reason):
            fetch_json(url, allow_private=True, timeout=1.0, max_bytes=1024)
        print(f"{handler.__name__}: refused after {time.monotonic() - started:.2f} s")


def test_read_document__names_another_issuer__refused() -> None:
    with serving(Document) as url, pytest.raises(FetchRefused, match="names the issuer 'x'"):
        read_document(url, lambda found: fetch_json(found, allow_private=True), allow_http=True)


@pytest.mark.parametrize(
    "host", ["[64:ff9b::7f00:1]", "[::127.0.0.1]", "[::ffff:0:7f00:1]", "[2002:7f00:1::1]", "192.0.0.8"]
)
def test_fetch__transition_form_of_an_internal_address__refused_before_connecting(host: str) -> None:
    with pytest.raises(FetchRefused, match="not public"):
        fetch_json(f"https://{host}:1/.well-known/openid-configuration", allow_private=False)
