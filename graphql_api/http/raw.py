"""JSON answers sent straight on the ASGI channel, by middlewares that answer before the app runs.

The body limits, the concurrency cap, the deadline and the health routes refuse or answer
without Starlette's Response; they all send the same two messages, built here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from starlette.types import Send

from graphql_api.errors import ApiError


def error_body(error: ApiError, **extensions: Any) -> dict[str, Any]:
    """The GraphQL error body of ``error``, with ``extensions`` added to its own."""
    return {"errors": [{"message": str(error), "extensions": {**error.extensions, **extensions}}]}


async def send_json(send: Send, status: int, body: object, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """Answer ``body`` (a value, or JSON already encoded) with ``status`` and extra ``headers``."""
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": content})
