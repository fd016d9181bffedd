"""The async datastore from synchronous tests: ``run(coroutine)`` on one event loop of the session.

Tests are plain functions, while every datastore read and write is a coroutine. ``run`` hands
one to a single event loop running in a daemon thread (started on first use, shared by the
whole session) and waits for its result, so a test's own calls keep their order, and the live
servers a test starts (uvicorn, each in its own thread with its own loop) keep running while
it waits. One loop for the session, not ``asyncio.run`` per call: the client's kept-alive
connections belong to the loop that made them (datastore/aws/exchange.py), so they are made
once and reused, as a server process reuses its own.

The coroutine runs in a copy of the caller's context, as a function called directly would:
a CallLog the test set (``calls.metering``) records its calls. What the coroutine sets in its
context stays there. A ``run`` from a synchronous callback the datastore calls on the
session's loop (a restore's ``on_partition``) goes to a second loop of the session, in a
thread of its own, while the first waits for the callback, as it would for any that blocks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
# The session's loops, each in its own daemon thread: the first serves the tests; the next
# serves a ``run`` called from a synchronous callback running on the one before (a restore's
# progress callback that writes, say), which that loop waits for, as it would wait for a
# callback that blocked.
_loops: list[tuple[asyncio.AbstractEventLoop, threading.Thread]] = []


def loop(depth: int = 0) -> asyncio.AbstractEventLoop:
    """The session's event loop (``depth`` 0), running in its daemon thread (started on first use)."""
    with _lock:
        while len(_loops) <= depth:
            made = asyncio.new_event_loop()
            thread = threading.Thread(
                target=_serve, args=(made,), name=f"tests-blocking-loop-{len(_loops)}", daemon=True
            )
            thread.start()
            _loops.append((made, thread))
        return _loops[depth][0]


def _serve(target: asyncio.AbstractEventLoop) -> None:
    """Run the loop for the rest of the session. A coroutine that raises KeyboardInterrupt or
    SystemExit (a test's Ctrl-C, say) has asyncio raise it out of the loop as well as into its
    task: the loop goes on, and the task hands it to the test that waits for it."""
    while True:
        try:
            target.run_forever()
            return
        except (KeyboardInterrupt, SystemExit):
            continue


def _depth() -> int:
    """The loop a ``run`` from this thread goes to: the next after the one this thread runs."""
    current = threading.current_thread()
    for depth, (_made, thread) in enumerate(_loops):
        if thread is current:
            return depth + 1
    return 0


def run(awaitable: Awaitable[T], timeout: float | None = None) -> T:
    """``awaitable``'s result (or its exception), run to completion on the session's loop."""
    return _run_at(_depth(), awaitable, timeout)


def _run_at(depth: int, awaitable: Awaitable[T], timeout: float | None = None) -> T:
    target = loop(depth)
    context = contextvars.copy_context()
    result: concurrent.futures.Future[T] = concurrent.futures.Future()

    def start() -> None:
        try:
            task = target.create_task(_awaited(awaitable), context=context)
        except BaseException as error:  # handed to the waiting test
            result.set_exception(error)
            return

        def finished(task: asyncio.Task[T]) -> None:
            if task.cancelled():
                result.cancel()
            elif (error := task.exception()) is not None:
                result.set_exception(error)
            else:
                result.set_result(task.result())

        task.add_done_callback(finished)

    target.call_soon_threadsafe(start)
    return result.result(timeout)


def on_every_loop(make: Callable[[], Awaitable[object]]) -> None:
    """``make()`` run on each loop the session started, the deepest first (closing connections)."""
    for depth in reversed(range(len(_loops))):
        _run_at(depth, make())


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def collect(items: AsyncIterable[T]) -> list[T]:
    """Every item of an async iterator (``pagination.every``, ``calls.metered``, a ``Walk``)."""
    return [item async for item in items]


def run_all(items: AsyncIterable[T]) -> list[T]:
    """``run(collect(items))``: every item of an async iterator, from a synchronous test."""
    return run(collect(items))


def run_each(items: AsyncIterable[T]) -> Iterator[T]:
    """The items of an async iterator one by one, each fetched on the session's loop: for a
    test that stops early, or acts between items."""
    iterator = items.__aiter__()
    while True:
        try:
            yield run(iterator.__anext__())
        except StopAsyncIteration:
            return
