"""AWS Lambda entry points of live updates: API Gateway's WebSocket API and the table's stream.

- ``connection_handler``: the WebSocket API's ``$connect``, ``$default`` and ``$disconnect``
  routes (graphql-transport-ws, graphql_api/subscriptions/gateway.py);
- ``stream_handler``: the table's stream (an event source mapping), fanning each
  organisation's events out to its subscribers with ``PostToConnection``.

Both build the same app as the HTTP function (graphql_api/entrypoints/asgi.py: settings from
the environment, the layout check, the schema with its extensions) once per execution
environment, and run every invocation on one event loop kept for the process, as the HTTP
function's Mangum does, so the connections to DynamoDB are reused by warm invocations.
"""

from __future__ import annotations

from graphql_api.entrypoints.heap import build_without_collecting

build_without_collecting()  # before the imports below: asgi settles the heap once the app is built

import asyncio
from typing import Any

from graphql_api.app import LiveParts
from graphql_api.entrypoints.asgi import app, datastore
from graphql_api.subscriptions.gateway import Boto3ManagementApi, LiveGateway

_parts: LiveParts = app.state.live_parts
gateway = LiveGateway(_parts.schema, _parts.services, _parts.backend, _parts.persisted, Boto3ManagementApi())
_loop = asyncio.new_event_loop()


def connection_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """One WebSocket event: its answer (``statusCode``; API Gateway uses it for ``$connect``)."""
    return _loop.run_until_complete(gateway.connection(event))


def stream_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """One batch of stream records. An exception fails the batch, which Lambda retries."""
    return _loop.run_until_complete(gateway.stream(event))


def close() -> None:
    """End this environment's app (the tests import this module once per test)."""
    try:
        _loop.run_until_complete(datastore.aclose())
    finally:
        _loop.close()
        _parts.services.executor.shutdown(wait=False)
        datastore.close()  # the boto3 clients made (the control plane's, the stream's), if any
