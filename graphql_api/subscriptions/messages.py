"""What a graphql-transport-ws message may be before anything reads it: its size, its operation id.

A message is bounded as an HTTP body is (MAX_BODY_BYTES), before it is parsed: a socket is
no way around the body's bound. One check for both transports that take messages, the ASGI
WebSocket (websocket.py; uvicorn's ``ws_max_size`` says the same where we start uvicorn,
graphql_api/entrypoints/serving.py, but another server may not) and API Gateway's
(gateway.py). An operation id is the client's name for a subscription, kept for its life
(and part of an item's key on AWS): graphql-ws's are UUIDs, so 128 characters is plenty.
"""

from __future__ import annotations

from typing import Final

from graphql_api.subscriptions.closing import Close, Closed

OPERATION_ID_MAX: Final = 128


def check_size(text: str, limit: int) -> None:
    """Closed(TOO_BIG) when ``text`` is more than ``limit`` bytes in UTF-8."""
    # A character is at least one byte: only a text short enough in characters is encoded.
    if len(text) > limit or len(text.encode()) > limit:
        raise Closed(Close.TOO_BIG, f"a message is at most {limit} bytes")


def operation_id_of(operation_id: object) -> str:
    """The subscribe message's id; Closed(BAD_MESSAGE) unless a string of 1 to OPERATION_ID_MAX characters."""
    if not isinstance(operation_id, str) or not 0 < len(operation_id) <= OPERATION_ID_MAX:
        raise Closed(Close.BAD_MESSAGE, f"a subscribe message's id is a string of 1 to {OPERATION_ID_MAX} characters")
    return operation_id
