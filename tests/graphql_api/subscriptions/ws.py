"""A small graphql-transport-ws client on the `websockets` library, for protocol-level tests.

The front-end tests use the real graphql-ws client in Node (tests/graphql_api/frontend/); this
one lets a test send exactly the frames it means (a second init, a subscribe before the ack,
no pong) and read exactly what comes back, close codes included.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

if TYPE_CHECKING:
    from tests.conftest import Tenant
    from tests.graphql_api.fixtures import Api

# An admin's audit trail, resumable: what the resume and cost tests subscribe to.
AUDIT = "subscription Audit($after: String) { auditEventAdded(after: $after) { cursor action event { entityId } } }"

PROTOCOL = "graphql-transport-ws"


@dataclass
class Socket:
    ws: ClientConnection
    # Messages read while waiting for another (pings answered, frames of other ids).
    pending: list[dict[str, Any]] = field(default_factory=list)
    pings: int = 0
    answer_pings: bool = True

    def send(self, message: dict[str, Any]) -> None:
        self.ws.send(json.dumps(message))

    def receive(self, timeout: float = 10) -> dict[str, Any]:
        """The next message, pings answered on the way (unless ``answer_pings`` is off)."""
        if self.pending:
            return self.pending.pop(0)
        while True:
            frame = self.ws.recv(timeout=timeout)
            assert isinstance(frame, str), "graphql-transport-ws messages are text frames"
            message: dict[str, Any] = json.loads(frame)
            if message.get("type") == "ping":
                self.pings += 1
                if self.answer_pings:
                    self.send({"type": "pong"})
                    continue
            return message

    def init(self, payload: dict[str, Any] | None) -> dict[str, Any]:
        self.send({"type": "connection_init", **({} if payload is None else {"payload": payload})})
        return self.receive()

    def subscribe(self, operation_id: str, query: str, variables: dict[str, Any] | None = None) -> None:
        self.send({"id": operation_id, "type": "subscribe", "payload": {"query": query, "variables": variables or {}}})

    def next_of(self, operation_id: str, timeout: float = 10) -> dict[str, Any]:
        """The next message of ``operation_id`` (others are kept for later)."""
        kept: list[dict[str, Any]] = []
        try:
            while True:
                message = self.receive(timeout)
                if message.get("id") == operation_id:
                    return message
                kept.append(message)
        finally:
            self.pending = kept + self.pending

    def closed_with(self, timeout: float = 10) -> tuple[int, str]:
        """Read until the server closes; its close code and reason."""
        try:
            while True:
                self.receive(timeout)
        except ConnectionClosed as closed:
            received = closed.rcvd
            return (received.code, received.reason) if received is not None else (1006, "")

    def close(self) -> None:
        self.ws.close()


def open_socket(base_url: str, *, headers: dict[str, str] | None = None, subprotocol: str = PROTOCOL) -> Socket:
    url = base_url.replace("http://", "ws://") + "/graphql"
    ws = connect(url, subprotocols=[subprotocol], additional_headers=headers or {}, open_timeout=10)  # type: ignore[list-item]
    return Socket(ws)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def admin_socket(live_url: str, api: Api, tenant: Tenant) -> Socket:
    """A connection acknowledged for ``tenant``'s admin."""
    socket = open_socket(live_url)
    assert socket.init(bearer(api.token(tenant.admin))) == {"type": "connection_ack"}
    return socket
