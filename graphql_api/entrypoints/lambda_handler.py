"""AWS Lambda entry point: the same ASGI app, behind API Gateway's HTTP API, through Mangum.

The app is built once per execution environment (at import, during Lambda's init phase) and
reused by every invocation it serves. Lifespan events are off: the app needs no start-up work
and Lambda gives no shutdown signal to act on.
"""

from __future__ import annotations

from mangum import Mangum

from graphql_api.entrypoints.asgi import app

handler = Mangum(app, lifespan="off")
