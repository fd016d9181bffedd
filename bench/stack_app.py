"""The cold-start lane's second floor: the bare app (bench/bare_app.py) after importing the
libraries the product serves with, none of its own code.

``python -m bench.stack_app PORT``. Between this and the bare app is what the stack itself
costs a start: Strawberry and graphql-core, aiodynamo (and yarl under it), PyJWT with the
cryptography it loads for RS and EC keys, prometheus-client, orjson, aiodataloader and
python-ulid, and uvicorn's WebSocket protocol. Between this and ``server.py run`` is what the
product's own modules, its schema's build and its first request cost. Its collector is off while
it imports, as the product's is (graphql_api/entrypoints/heap.py), so the two are comparable.
"""

from __future__ import annotations

import gc
import sys

gc.disable()

import aiodataloader  # noqa: E402
import aiodynamo.client  # noqa: E402
import graphql  # noqa: E402
import jwt  # noqa: E402
import jwt.algorithms  # noqa: E402
import orjson  # noqa: E402
import prometheus_client  # noqa: E402
import strawberry  # noqa: E402
import ulid  # noqa: E402
import uvicorn.protocols.websockets.websockets_sansio_impl  # noqa: E402

from bench.bare_app import app  # noqa: E402

# Imported for what importing them costs; named here so that no linter takes them for unused.
STACK = (aiodataloader, aiodynamo.client, graphql, jwt.algorithms, orjson, prometheus_client, strawberry, ulid)

if __name__ == "__main__":
    gc.freeze()
    gc.enable()
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
