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
# counting anyway, and the promoted ones set off full collections; 7,000 took Q1 in-process
# from 996/90/7 collections (generations 0/1/2) taking 101 ms to 11/0/0 taking 12-18 ms.
# Under 16 clients at once 7,000 was still too few: 16 requests' objects are alive together,
# so each young collection promoted them, every tenth a middle one scanned them again, and
# full collections came back. 50,000, against 7,000 in turn within one process, two rounds
# (``python -m bench.profile Q1 Q2 Q4 -n 100 -c 16 --gc 7000,10,10/50000,10,10 --rounds 2``,
# the collector's own CPU per request): Q1 4.2/5.7 -> 1.6/1.5 ms, Q2 17.4/18.6 -> 7.8/8.1 ms,
# Q4 4.0/1.5 -> 0.4/0.5 ms, and the longest pause in CPU time no longer: Q1 22/40 -> 46/30 ms,
# Q2 119/159 -> 96/103 ms, Q4 228/42 -> 23/24 ms (the full collections, gone).
# Alone (the same command without -c) the collector's CPU per request falls too (Q1 1.4/1.8 ->
# 0.2/0.2 ms) but a request now and then waits out one larger young collection: the longest
# pause Q1 4/7 -> 17/19 ms, Q4 7/3 -> 32 ms (one in 100 requests) and none, Q3 7/8 -> none.
YOUNG_OBJECTS: Final = 50000


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
