"""The serving process's heap: no cyclic collection while it is built, then out of the cyclic
collector's reach.

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
# 200,000 since: the count is net (a freed object takes one off), so what matters is how many
# objects a request holds at its peak, and the whole tree (Q7, 1,023 calls in flight and their
# answers) holds more than 50,000: two young collections a request, each scanning and promoting
# the whole tree, then middle collections scanning it again (about 35 ms of its 300 ms CPU).
# Above the peak, a request's objects are freed before the count is reached. 50,000 against
# 200,000 in turn, two rounds (``python -m bench.profile Q7 -n 16 --loops uvloop --gc
# 50000,10,10/200000,10,10/1000000,10,10 --rounds 2``), CPU per request: Q7 297.7/277.2 ->
# 260.5/247.8 ms (1,000,000: 258.1/250.5), collections in 18 requests 33/3/0 -> 1/0/0; under
# 16 clients (``... Q1 Q2 Q4 -n 96 -c 16 --gc 50000,10,10/200000,10,10 --rounds 2``) Q1
# 20.9/20.4 -> 19.6/20.4 ms, Q2 34.0/38.0 -> 32.8/33.6 ms, Q4 4.5/4.4 -> 3.9/4.2 ms, the longest
# pause about the same (Q2 68/92 -> 73/85 ms). mypy's young threshold is the same (its build.py).
# A planned query leaves no cyclic garbage since graphql-core's executor cycle is broken as the
# plan ends (execution/plan/extension.py; it left 107 objects a Q3, 154 a Q1), so the collector
# has only what other paths leave (``python -m bench.garbage``): a mutation about 120 objects
# (graphql-core's executor, the same cycle), a document that fails validation about 840
# (graphql-core's visitors). A flood of those meets a young collection every few hundred
# requests, which scans what they left.
YOUNG_OBJECTS: Final = 200_000

# Set by ``build_without_collecting`` until the heap is settled or collection resumes.
_building = False


def build_without_collecting() -> None:
    """No cyclic collection while the process imports and builds what it serves: an entry
    point's first call, before its imports.

    Start-up allocates what lives as long as the process (modules, classes, the schema), so the
    collections CPython would run meanwhile find nearly nothing, yet each scans, and promotes,
    what is young, and the middle and full ones rescan it all: they cost a start about 10% of
    its CPU (``server.py run`` to its first answer, 770 -> 690 ms, interleaved runs of each).
    ``settle_heap`` turns collection back on, and ``resume_collecting`` does for a process that
    serves nothing (a command).
    """
    global _building
    _building = True
    gc.disable()


def resume_collecting() -> None:
    """The collector as CPython runs it, for a process that will not ``settle_heap``."""
    global _building
    if _building:
        _building = False
        gc.enable()


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
    # What start-up left as garbage is a few hundred objects (723 after create_app on the bench's
    # server, 736 after server.py's imports), which a full collection took 85-115 ms to find, on
    # the path to the first answer; frozen, they stay for the process. Built without collecting,
    # every object is still young, so even a young collection is a full one: none then.
    if not _building:
        gc.collect(1)
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, middle, old)
    resume_collecting()
