"""AWS Lambda entry point: the same ASGI app, behind API Gateway's HTTP API, through Mangum.

The app is built once per execution environment (at import, during Lambda's init phase) and
reused by every invocation it serves. Lifespan events are off: the app needs no start-up work
and Lambda gives no shutdown signal to act on.

Mangum runs every invocation on one event loop, made when the handler is built and kept for the
process, so the connections to DynamoDB (one pool per loop, datastore/aws/exchange.py) are made
on the first invocation and reused by every warm one. Nothing in Lambda ends that loop: the
process is frozen and killed with it. ``close`` is for whoever does end it (the tests, which
import this module once per test): the connections are closed on their own loop, then the loop.
"""

from __future__ import annotations

from graphql_api.entrypoints.heap import build_without_collecting

build_without_collecting()  # before the imports below: asgi settles the heap once the app is built

import asyncio

from mangum import Mangum

from graphql_api.entrypoints.asgi import app, datastore

handler = Mangum(app, lifespan="off")


def close() -> None:
    """End this environment's app: its connections to DynamoDB on Mangum's loop, that loop, and
    the boto3 clients made, if any."""
    loop = asyncio.get_event_loop_policy().get_event_loop()
    try:
        loop.run_until_complete(datastore.aclose())
    finally:
        loop.close()
        asyncio.set_event_loop(None)
        datastore.close()  # the boto3 clients made (the control plane's, the stream's), if any
