"""Why a live connection ends: one close code for WebSocket, one error code for HTTP streams.

A subscription is never dropped silently: whatever ends it from the server's side says why,
as a graphql-transport-ws close code (the protocol's own where it has one) and, on the
HTTP streams (over_http.py), as the final result's error with ``extensions.code``. The codes a
client acts on:

- UNAUTHORIZED, 4401: no credential in ``connection_init`` (or a subscribe before it was
  acknowledged): sign in. graphql-ws does not retry it.
- FORBIDDEN, 4403: the credential is not (or no longer) good: expired (a token without a
  sign-in session; one with a session lasts as long as it: expiry.py), the session ended, the
  organisation suspended, the employee terminated, the role changed, the API key revoked, or
  an operator's token. graphql-ws retries it, calling ``connectionParams`` again: a fresh token reconnects.
- TIMED_OUT, 4408: no ``connection_init`` in time, no ``pong`` to a ping, or the connection
  reached its maximum lifetime: reconnect (graphql-ws does, by itself).
- TOO_MANY, 1013: too many connections for the organisation or for the server process: try
  again later. Not 4429, which the protocol keeps for a second ``connection_init`` and
  graphql-ws takes as fatal (it would never retry); 1013 it retries, with the reason.
- SLOW, 4413: the client fell behind (its queue of undelivered events filled): reconnect and
  subscribe with ``after`` set to the last cursor received; nothing is lost.
- GOING_AWAY, 1001: the server is stopping; reconnect (to another process). Sent by the
  hub and, at SIGTERM, by uvicorn's WebSocket protocol as we configure it
  (graphql_api/entrypoints/websocket_protocol.py), both with this reason.
- TOO_BIG, 1009: a message over MAX_BODY_BYTES, the bound of an HTTP body (RFC 6455's code).
- UNAVAILABLE, 1013: the credential or the caller could not be checked (DynamoDB did not
  answer): try again later.
"""

from __future__ import annotations

from enum import Enum


class Close(Enum):
    UNAUTHORIZED = (4401, "Unauthorized", "UNAUTHENTICATED")
    FORBIDDEN = (4403, "Forbidden", "FORBIDDEN")
    TIMED_OUT = (4408, "Timed out", "TIMEOUT")
    TOO_MANY = (1013, "Too many connections: try again later", "TOO_MANY_CONNECTIONS")
    SLOW = (4413, "Slow consumer: resume with your last cursor", "SLOW_CONSUMER")
    # The protocol's own, which Strawberry's handler sends by itself over the ASGI WebSocket;
    # on AWS (gateway.py) they are told before API Gateway closes the socket.
    BAD_MESSAGE = (4400, "Invalid message received", "BAD_REQUEST")
    DUPLICATE = (4409, "Subscriber already exists", "BAD_REQUEST")
    TOO_MANY_INITS = (4429, "Too many initialisation requests", "BAD_REQUEST")
    GOING_AWAY = (1001, "Going away: the server is stopping, reconnect", "UNAVAILABLE")
    TOO_BIG = (1009, "Message too big", "BAD_REQUEST")
    UNAVAILABLE = (1013, "Try again later", "UNAVAILABLE")

    @property
    def code(self) -> int:
        return int(self.value[0])

    @property
    def reason(self) -> str:
        return str(self.value[1])

    @property
    def error_code(self) -> str:
        """``extensions.code`` of the final part of an HTTP multipart subscription."""
        return str(self.value[2])


class Closed(Exception):
    """A connection is being closed for ``close``; ``detail`` says more (at most 123 bytes go out
    as a WebSocket close reason, the whole of it as a multipart error message)."""

    def __init__(self, close: Close, detail: str | None = None) -> None:
        super().__init__(detail or close.reason)
        self.close = close
        self.detail = detail or close.reason

    def reason(self) -> str:
        """The close frame's reason: the detail, cut to what a close frame carries (123 bytes)."""
        encoded = self.detail.encode()
        return self.detail if len(encoded) <= 123 else encoded[:120].decode(errors="ignore") + "..."
