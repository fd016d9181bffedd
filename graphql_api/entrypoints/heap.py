"""The serving process's heap, once its app is built: out of the cyclic collector's reach.

Its own module, imported by every entry point (graphql_api/entrypoints/asgi.py, and so each uvicorn
worker and Lambda's init phase; ``server.py run``; the bench's server), and free of uvicorn,
which the Lambda package does not carry.
"""

from __future__ import annotations

import gc
from typing import Final

# Container objects allocated, net, before a young (generation 0) collection. CPython's 700
# ran 16 of them in each directory query (Q1 builds some 11,000 dicts and lists), each one
# scanning, and promoting, objects that their request was about to free by reference
# counting anyway, and the promoted ones set off full collections. Ten times that, in
# ``python -m bench.profile Q1 Q2 Q3 -n 60`` (62 requests each, which prints the collector's
# runs): Q1 996/90/7 collections (generations 0/1/2) taking 101 ms in all -> 11/0/0 taking
# 12-18 ms; Q2 254 ms -> 114-142 ms; Q3 11 ms -> 2 ms. The longest pause stays under 9 ms.
YOUNG_OBJECTS: Final = 7000


def settle_heap() -> None:
    """Take what the process built to serve (modules, botocore's service models, the schema,
    the app) out of the cyclic garbage collector's reach, once the app is built.

    Those objects live as long as the process, yet every full (generation 2) collection walks
    them all: about 70-80 ms here, and every request in flight waits it out. Requests allocate
    enough to set one off every few dozen requests, so it was the p99: in-process, Q4's p99
    went from 91-101 ms to 36 ms and Q1's from 173-183 ms to 105-108 ms, the medians
    unchanged (``python -m bench.profile``, 300 requests each). ``gc.freeze`` is the standard
    library's tool for this; objects made later, per request, are collected as before,
    with young collections ``YOUNG_OBJECTS`` apart.
    """
    gc.collect()  # what is already garbage is not kept for ever
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, middle, old)
