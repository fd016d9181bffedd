"""A real webhook receiver on the loopback: verifies every request with ``standardwebhooks``.

It records each request it got (verified or not) with its ``webhook-id`` and parsed body; it
can be taken down (its port closed: connections refused) and brought up again on the same
port, answer a chosen status, stall, or answer an endless body.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


@dataclass
class Received:
    webhook_id: str
    body: dict[str, Any]
    verified: bool
    signatures: int
    at: float  # time.monotonic()


@dataclass
class Receiver:
    secrets: list[str] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    stall_seconds: float = 0.0
    endless: bool = False
    port: int = 0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def up(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = self.rfile.read(length)
                headers = {name.lower(): value for name, value in self.headers.items()}
                verified = any(_verifies(secret, payload, headers) for secret in receiver.secrets)
                with receiver._lock:
                    receiver.received.append(
                        Received(
                            headers.get("webhook-id", ""),
                            json.loads(payload),
                            verified,
                            len(headers.get("webhook-signature", "").split()),
                            time.monotonic(),
                        )
                    )
                if receiver.stall_seconds:
                    time.sleep(receiver.stall_seconds)
                try:
                    self._answer()
                except OSError:
                    return  # the sender gave up (its timeout) before the answer

            def _answer(self) -> None:
                self.send_response(receiver.status)
                for name, value in receiver.headers.items():
                    self.send_header(name, value)
                if receiver.endless:
                    self.end_headers()
                    try:
                        while True:
                            self.wfile.write(b"x" * 65536)
                    except OSError:
                        return
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server
        return self

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def ids(self, *, verified: bool = True) -> list[str]:
        with self._lock:
            return [each.webhook_id for each in self.received if each.verified or not verified]


def _verifies(secret: str, payload: bytes, headers: dict[str, str]) -> bool:
    try:
        Webhook(secret).verify(payload, headers)
    except WebhookVerificationError:
        return False
    return True
