"""The request's DataLoader (graphql_api/execution/batch_loader.py): batches, their schedule, failures.

Through ``Loader`` (execution/loaders.py), admitting every batch; its batch here runs a plain
function on a thread (``on_thread``), so a test can hold a batch open or fail it from outside
the loop. The product's batches are coroutines on the loop (datastore/table/scoped.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from datastore.aws import calls
from datastore.errors import InvalidInput
from graphql_api.execution.loaders import Loader

T = TypeVar("T")
KEYS = 250


def admit_all() -> None:
    """The session's ``admit_call`` when nothing refuses a call."""


def on_thread(pool: ThreadPoolExecutor, fn: Callable[[list[T]], list[T]]) -> Callable[[list[T]], Awaitable[list[T]]]:
    """A loader's batch that runs ``fn`` on ``pool``, in the loading context (its loader batch)."""

    async def batch(keys: list[T]) -> list[T]:
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(context.run, fn, keys))

    return batch


def test_loader__many_keys__one_batch_call_with_every_key() -> None:
    seen: list[list[int]] = []

    def batch(keys: list[int]) -> list[int]:
        seen.append(keys)
        return [key * 2 for key in keys]

    async def load() -> list[int]:
        with ThreadPoolExecutor(2) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, batch))
            return list(await asyncio.gather(*(loader.load(key) for key in range(KEYS))))

    assert asyncio.run(load()) == [key * 2 for key in range(KEYS)]
    assert seen == [list(range(KEYS))]


def test_loader__one_consumer_cancelled__the_shared_read_goes_on() -> None:
    """graphql-core cancels a failed field's sibling awaitables; another consumer of the same
    key (the caller check) must still get its value, not a CancelledError."""

    async def load() -> tuple[bool, int]:
        with ThreadPoolExecutor(1) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, lambda keys: [key * 2 for key in keys]))
            check = loader.load(21)
            field = asyncio.ensure_future(loader.get(21))
            many = asyncio.ensure_future(loader.get_many([21]))
            await asyncio.sleep(0)
            field.cancel()
            many.cancel()
            await asyncio.gather(field, many, return_exceptions=True)
            return field.cancelled() and many.cancelled(), await check

    assert asyncio.run(load()) == (True, 42)


def test_loader__failed_batch_whose_consumers_were_cancelled__no_unretrieved_exception_logged() -> None:
    """A deadline fails a batch whose fields graphql-core already cancelled: nobody reads the
    shared futures' exception, and asyncio must not log each one when it is collected (it
    did, once per key, a flood of stack traces during an outage)."""
    logged: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(record.getMessage())

    def fail(keys: list[int]) -> list[int]:
        raise InvalidInput("keys", "the batch failed")

    async def load() -> None:
        with ThreadPoolExecutor(1) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, fail))
            fields = [asyncio.ensure_future(loader.get(key)) for key in range(5)]
            many = asyncio.ensure_future(loader.get_many(range(5, 10)))
            await asyncio.sleep(0)
            for task in [*fields, many]:
                task.cancel()
            await asyncio.gather(*fields, many, return_exceptions=True)
            await asyncio.sleep(0.2)  # the batch fails meanwhile

    handler = Collect()
    logging.getLogger("asyncio").addHandler(handler)
    try:
        asyncio.run(load())
        gc.collect()  # an unretrieved exception is reported when its future is collected
    finally:
        logging.getLogger("asyncio").removeHandler(handler)
    assert [message for message in logged if "never retrieved" in message] == []


def test_loader__batch_depth__one_deeper_than_the_deepest_load_of_its_keys() -> None:
    """A key asked again before its batch goes out, from code that has waited on two round
    trips, puts the batch at depth 3; what its consumers load next is deeper still."""
    depths: list[int | None] = []

    def batch(keys: list[int]) -> list[int]:
        current = calls.current_batch.get()
        depths.append(None if current is None else current.depth)
        return keys

    async def ask(loader: Loader[int, int], key: int, waited: int) -> int:
        calls.waited(waited)  # this task's code already waited on ``waited`` round trips
        await loader.get(key)
        return calls.current_depth.get()

    async def load() -> list[int]:
        with ThreadPoolExecutor(2) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, batch))
            return list(await asyncio.gather(ask(loader, 7, 0), ask(loader, 7, 2), ask(loader, 8, 1)))

    assert asyncio.run(load()) == [3, 3, 3]
    assert depths == [3]


def test_loader__get_many_over_two_pending_batches__waits_for_both() -> None:
    """Keys already on their way in an earlier batch, and fresh ones: one wait per batch, and
    every value once both batches are in."""
    seen: list[list[int]] = []

    def batch(keys: list[int]) -> list[int]:
        seen.append(keys)
        return [key * 2 for key in keys]

    async def load() -> dict[int, int]:
        with ThreadPoolExecutor(2) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, batch))
            first = asyncio.ensure_future(loader.get_many([1, 2, 3]))
            await asyncio.sleep(0.01)  # the first batch is out, not back
            second = await loader.get_many([2, 3, 4, 5])
            return {**await first, **second}

    assert asyncio.run(load()) == {1: 2, 2: 4, 3: 6, 4: 8, 5: 10}
    assert seen == [[1, 2, 3], [4, 5]]


def test_loader__get_many_when_one_of_its_batches_fails__raises_that_batchs_error() -> None:
    """The error of the failed batch, not a value read before it was set; the keys of the
    failed batch are read afresh next time."""

    def batch(keys: list[int]) -> list[int]:
        if 13 in keys:
            raise InvalidInput("keys", "13 is unlucky")
        return keys

    async def load() -> tuple[BaseException | None, dict[int, int]]:
        with ThreadPoolExecutor(2) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, batch))
            good = asyncio.ensure_future(loader.get_many([1, 2]))
            await asyncio.sleep(0.01)  # [1, 2] go out in a batch of their own
            failed: BaseException | None = None
            try:
                await loader.get_many([1, 2, 13])
            except InvalidInput as error:
                failed = error
            return failed, await good

    failed, good = asyncio.run(load())
    assert isinstance(failed, InvalidInput) and failed.field == "keys"
    assert good == {1: 1, 2: 2}


def test_loader__batch_task_cancelled__its_consumers_are_cancelled_not_left_waiting() -> None:
    """A batch whose task is cancelled (the loop shutting down) sets no value: the keys'
    consumers must end, not wait for ever."""
    release = threading.Event()

    def batch(keys: list[int]) -> list[int]:
        release.wait(5)
        return keys

    async def load() -> tuple[bool, bool]:
        with ThreadPoolExecutor(1) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, batch))
            many = asyncio.ensure_future(loader.get_many([1, 2]))
            one = asyncio.ensure_future(loader.get(2))
            await asyncio.sleep(0.05)
            for task in asyncio.all_tasks():
                if task.get_coro().__qualname__ == "dispatch_queue_batch":  # type: ignore[union-attr]  # aiodataloader's batch task
                    task.cancel()
            done, _ = await asyncio.wait([many, one], timeout=2)
            release.set()
            return many in done and many.cancelled(), one in done and one.cancelled()

    assert asyncio.run(load()) == (True, True)


def test_loader__deferred_keys_of_one_turn__one_ready_future_then_each_value() -> None:
    """What a compiled plan waits on for root fields by id: the keys of one turn share their
    batch's one future, each value is ``then`` of the key's, and what is loaded after it is a
    round trip deeper. A key already loaded is ready at once."""
    seen: list[list[int]] = []

    def batch(keys: list[int]) -> list[int]:
        seen.append(keys)
        return [key * 2 for key in keys]

    async def load() -> tuple[int, list[str], int, bool]:
        with ThreadPoolExecutor(2) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, batch))
            deferred = [loader.deferred(key, lambda value: f"<{value}>") for key in (1, 2, 3, 2)]
            readies = {d.ready for d in deferred}
            assert None not in readies
            await asyncio.wait(readies)  # type: ignore[arg-type]  # none is None
            values = [d.value() for d in deferred]
            depth = calls.current_depth.get()
            again = loader.deferred(3, str)
            return len(readies), values, depth, again.ready is None and again.value() == "6"

    assert asyncio.run(load()) == (1, ["<2>", "<4>", "<6>", "<4>"], 1, True)
    assert seen == [[1, 2, 3]]


def test_loader__deferred_key_of_a_failed_batch__value_raises_and_a_cancelled_wait_stops_nothing() -> None:
    """``value()`` raises the batch's error for each of its keys. A resolver waiting through
    ``result()`` that is cancelled leaves the batch, which another consumer shares, running."""

    def batch(keys: list[int]) -> list[int]:
        if 13 in keys:
            raise InvalidInput("keys", "13 is unlucky")
        return keys

    async def load() -> tuple[bool, int, BaseException | None]:
        with ThreadPoolExecutor(2) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, batch))
            waiting = asyncio.ensure_future(loader.deferred(1, int).result())
            shared = loader.deferred(1, int)
            await asyncio.sleep(0)  # the resolver is waiting
            waiting.cancel()
            await asyncio.wait({shared.ready})  # type: ignore[arg-type]  # pending
            failing = loader.deferred(13, int)
            await asyncio.wait({failing.ready})  # type: ignore[arg-type]  # pending
            raised: BaseException | None = None
            try:
                failing.value()
            except InvalidInput as error:
                raised = error
            return waiting.cancelled(), shared.value(), raised

    cancelled, value, raised = asyncio.run(load())
    assert cancelled
    assert value == 1
    assert isinstance(raised, InvalidInput) and raised.field == "keys"


def test_loader__schedule__a_batch_closes_in_the_second_iteration_after_its_first_key() -> None:
    """The schedule the bench's waves were measured with (aiodataloader's): a batch takes the
    keys asked for until its closing step, queued one iteration after its first key and run
    the iteration after that, so a key asked for in the next iteration joins it and one asked
    for in the second (behind the closing step) opens the next batch."""
    seen: list[list[int]] = []

    def batch(keys: list[int]) -> list[int]:
        seen.append(keys)
        return keys

    async def load() -> None:
        with ThreadPoolExecutor(1) as pool:
            loader: Loader[int, int] = Loader(admit_all, on_thread(pool, batch))
            loop = asyncio.get_running_loop()
            first = loader.load(1)
            loop.call_soon(loader.load, 2)  # the next iteration
            loop.call_soon(lambda: loop.call_soon(loader.load, 3))  # the one after
            loop.call_soon(lambda: loop.call_soon(lambda: loop.call_soon(loader.load, 4)))  # and the next
            await first
            await asyncio.sleep(0.05)

    asyncio.run(load())
    assert seen == [[1, 2], [3, 4]]


def test_loader__admit_refuses__the_batch_fails_with_its_error_and_nothing_is_fetched() -> None:
    """The session's ``admit_call`` refusing (deadline, call budget) fails the whole batch
    before its call is sent: every key raises the refusal."""
    seen: list[list[int]] = []

    def refuse() -> None:
        raise InvalidInput("budget", "no more calls")

    async def fetch(keys: list[int]) -> list[int]:
        seen.append(keys)
        return keys

    async def load() -> list[BaseException | int]:
        loader: Loader[int, int] = Loader(refuse, fetch)
        return list(await asyncio.gather(loader.get(1), loader.get(2), return_exceptions=True))

    results = asyncio.run(load())
    assert [isinstance(r, InvalidInput) and r.field == "budget" for r in results] == [True, True]
    assert seen == []
