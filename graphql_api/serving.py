"""How the app is served: uvicorn's HTTP parser, its event loop, the header-timeout guard,
and the process's heap once the app is built.

httptools (a C parser) on uvloop by default, issue 12 lever 5; HTTP_IMPLEMENTATION=h11 keeps
the pure-Python parser on asyncio's own loop. Either way the protocol is our subclass that
closes connections whose request head does not arrive in time (limits/header_timeout.py).
One place for ``server.py run`` (one process or workers), the production entry point
(graphql_api/asgi.py, and so Lambda) and the bench's server.
"""

from __future__ import annotations

import gc
from typing import Any

from graphql_api.config import ApiSettings, HttpImplementation
from graphql_api.limits.header_timeout import header_timeout_protocol, protocol_path

_LOOPS: dict[HttpImplementation, str] = {"httptools": "uvloop", "h11": "asyncio"}


def uvicorn_options(settings: ApiSettings) -> dict[str, Any]:
    """``uvicorn.run``/``uvicorn.Config`` options for an app built in this process."""
    implementation = settings.http_implementation
    return {
        "http": header_timeout_protocol(settings.header_timeout_seconds, implementation),
        "loop": _LOOPS[implementation],
    }


def worker_options(settings: ApiSettings) -> dict[str, Any]:
    """The same for ``--workers N``: spawned workers import the protocol by path, so it has
    the default header timeout (limits/header_timeout.py)."""
    implementation = settings.http_implementation
    return {"http": protocol_path(implementation), "loop": _LOOPS[implementation]}


def settle_heap() -> None:
    """Take what the process built to serve (modules, botocore's service models, the schema,
    the app) out of the cyclic garbage collector's reach, once the app is built.

    Those objects live as long as the process, yet every full (generation 2) collection walks
    them all: about 70-80 ms here, and every request in flight waits it out. Requests allocate
    enough to set one off every few dozen requests, so it was the p99: in-process, Q4's p99
    went from 91-101 ms to 36 ms and Q1's from 173-183 ms to 105-108 ms, the medians
    unchanged (``python -m bench.profile``, 300 requests each). ``gc.freeze`` is the standard
    library's tool for this; objects made later, per request, are collected as before.
    """
    gc.collect()  # what is already garbage is not kept for ever
    gc.freeze()
