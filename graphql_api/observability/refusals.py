"""JSON answers sent straight on the ASGI channel, and the one place refusals are counted.

The body limits, the concurrency cap, the deadline, the 401 and the health routes refuse or
answer without Starlette's Response; they all send the same two messages, built here once.
A refusal (``send_error``) also counts its ``extensions.code`` on the request's record, so
the access line's ``errors`` and ``hr_requests_with_error`` see every refused request, whichever
middleware refused it: that one count is why these answers are observability's, below the
limits, authentication and the request lifetime that send them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from graphql_api.execution.errors import ApiError
from graphql_api.observability.record import record_error


def error_body(error: ApiError, **extensions: Any) -> dict[str, Any]:
    """The GraphQL error body of ``error``, with ``extensions`` added to its own."""
    return {"errors": [{"message": str(error), "extensions": {**error.extensions, **extensions}}]}


async def send_json(send: Send, status: int, body: object, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """Answer ``body`` (a value, or JSON already encoded) with ``status`` and extra ``headers``."""
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": content})


async def send_error(
    scope: Scope,
    send: Send,
    status: int,
    error: ApiError,
    headers: Sequence[tuple[bytes, bytes]] = (),
    *,
    body: object | None = None,
) -> None:
    """Refuse with ``error``: its code counted for the access log, then ``body`` sent.

    ``body`` defaults to ``error_body(error)``; a caller passes its own when it adds to it
    (the 504's ``data: null``) or encoded it once ahead (the 503).
    """
    record_error(scope, str(error.extensions["code"]))
    await send_json(send, status, error_body(error) if body is None else body, headers)


class ErrorResponse(Response):
    """``send_error`` as a Starlette Response, for hooks that must return one (on_auth_error's 401)."""

    def __init__(self, status: int, error: ApiError, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(status_code=status)
        self.error = error
        self.extra_headers = tuple(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_error(scope, send, self.status_code, self.error, self.extra_headers)
