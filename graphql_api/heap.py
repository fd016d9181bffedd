"""The serving process's heap, once its app is built: out of the cyclic collector's reach.

Its own module, imported by every entry point (graphql_api/asgi.py, and so each uvicorn
worker and Lambda's init phase; ``server.py run``; the bench's server), and free of uvicorn,
which the Lambda package does not carry.
"""

from __future__ import annotations

import gc


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
