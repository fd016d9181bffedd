"""The async datastore from synchronous tests: ``run(coroutine)`` on one event loop of the session.

Tests are plain functions, while every datastore read and write is a coroutine. ``run`` hands
one to a single event loop running in a daemon thread (started on first use, shared by the
whole session) and waits for its result, so a test's own calls keep their order, and the live
servers a test starts (uvicorn, each in its own thread with its own loop) keep running while
it waits. One loop for the session, not ``asyncio.run`` per call: the client's kept-alive
connections belong to the loop that made them (datastore/async_http.py), so they are made
once and reused, as a server process reuses its own.

The coroutine runs in a copy of the caller's context, as a function called directly would:
a CallLog the test set (``calls.metering``) records its calls. What the coroutine sets in its
context stays there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import AsyncIterable, Awaitable, Iterator
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def loop() -> asyncio.AbstractEventLoop:
    """The session's event loop, running in its daemon thread (started on first use)."""
    global _loop, _thread
    with _lock:
        if _loop is None:
            made = asyncio.new_event_loop()
            _thread = threading.Thread(target=_serve, args=(made,), name="tests-blocking-loop", daemon=True)
            _thread.start()
            _loop = made
        return _loop


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


def on_loop_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def run(awaitable: Awaitable[T], timeout: float | None = None) -> T:
    """``awaitable``'s result (or its exception), run to completion on the session's loop."""
    if on_loop_thread():
        raise RuntimeError("run() called from the session loop's own thread: await it instead")
    target = loop()
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
