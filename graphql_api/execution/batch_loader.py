"""A request's DataLoader: the keys asked for in one stretch of the event loop, fetched as one batch.

aiodataloader (the product's DataLoader) collects the keys a request asks for into a queue
and dispatches the whole queue as one batch two loop iterations after its first key; the
resolvers woken in between (a level's sibling fields, whose awaitables complete together)
add their keys to it, so the loads of one nesting level go out together: one wave of
DynamoDB calls per level, however many parents. Every key is cached for the request, in a
cache map of ours (aiodataloader's public ``cache_map``): a key is fetched once, and asked
again it answers from its batch.

On top of it this loader keeps each batch as a value (``_Batch``): what every consumer of its
keys waits on at once (``get_many``, ``deferred``), settled when all its values are set. A
key joins the batch of the queue it was put in; which queue that is, aiodataloader does not
say publicly (``library_internals.dataloader_queue``, pinned and tested).

No consumer can cancel a read for the others. Every consumer of a key shares one future,
and cancelling a task cancels the future it awaits: graphql-core cancels a field's pending
awaitables when a non-null sibling fails, which cancelled a read the caller check
(auth/active.py) was awaiting too, and the request ended in a plain-text 500. So ``load``
hands each consumer its own future (``asyncio.shield``), and ``get_many`` and a
``Deferred`` wait with ``asyncio.wait``, which never cancels what it waits for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from aiodataloader import DataLoader

from datastore.aws import calls
from graphql_api.execution.explain import EXPLAINING, outside_fields
from graphql_api.execution.fields import Deferred
from graphql_api.execution.library_internals import dataloader_queue

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")


@dataclass(slots=True)
class _Batch(Generic[K, V]):
    """The keys of one dispatch, each with its one future, and the future settled when they all are."""

    queue: list[Any]  # aiodataloader's queue the keys were put in (one queue, one batch)
    settled: asyncio.Future[None]
    keys: list[K] = field(default_factory=list)
    futures: list[asyncio.Future[V]] = field(default_factory=list)


class SharedLoader(DataLoader[K, V], Generic[K, V]):
    """Batched, cached reads of one kind for one request; a subclass says how a batch is fetched."""

    def __init__(self, *, before_first_load: Callable[[], None] | None = None) -> None:
        # Each key's one future (aiodataloader's cache, held here): a key whose batch failed is
        # cleared by aiodataloader, so a later load fetches it afresh; a key that failed alone
        # (an Exception among ``fetch``'s values) stays, failed.
        self._futures: dict[K, asyncio.Future[V]] = {}
        # A batch is a whole queue and every key is cached, so a key's batch is found by its key.
        super().__init__(cache_map=self._futures)
        # Called once, just before the first key is asked for: what the request starts when it
        # first reaches for tenant data (request/session.py ``tenant_reached``).
        self._before_first_load = before_first_load
        # The batch of each key not yet settled, and the batch being collected.
        self._batch_of: dict[K, _Batch[K, V]] = {}
        self._collecting: _Batch[K, V] | None = None
        # The round trips behind each key (datastore.aws.calls.current_depth): at the load, until
        # its batch is fetched; then its batch's depth, which the key's consumers take on.
        self._asked_at: dict[K, int] = {}
        self._depths: dict[K, int] = {}

    async def fetch(self, keys: list[K]) -> Sequence[V | Exception]:
        """The values of one batch's ``keys``, in order (an exception for a key fails that key):
        the one call a subclass makes."""
        raise NotImplementedError

    # --- what consumers call --------------------------------------------------------------

    def load(self, key: K) -> asyncio.Future[V]:
        """The key's value, as a future of this consumer's own."""
        shared, _batch = self._entry(key)
        return shared if shared.done() else asyncio.shield(shared)

    async def get(self, key: K) -> V:
        value = await self.load(key)
        calls.waited(self._depths.get(key, 0))
        return value

    def deferred(self, key: K, then: Callable[[V], R]) -> Deferred[R]:
        """``then`` of the key's value, batched with every other load of this stretch, for a
        field declared by its load (execution/fields.py): the fields of a level wait once per
        batch, not once per key (as ``get_many``), and no coroutine is made for a key."""
        shared, batch = self._entry(key)
        depths = self._depths

        def value() -> R:
            found = shared.result()  # raises what the batch raised
            calls.waited(depths.get(key, 0))
            return then(found)

        return Deferred(None if batch is None else batch.settled, value)

    async def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """Each distinct key of ``keys`` once, batched with every other load of this stretch.

        For a whole page at once (schema/types/relations.py): one wait on the batches the keys
        are in, rather than a coroutine, a future and a task per object. Waiting key by key put
        one callback per key on the loop (a Handle each), twice, which on Q2's 1,000
        application owners cost more than building the objects.
        """
        distinct = list(dict.fromkeys(keys))
        entries = [self._entry(key) for key in distinct]
        pending = {batch.settled for _shared, batch in entries if batch is not None}
        if pending:
            await asyncio.wait(pending)
        found = {key: shared.result() for key, (shared, _batch) in zip(distinct, entries, strict=True)}
        calls.waited(max((self._depths.get(key, 0) for key in distinct), default=0))
        return found

    # --- batches --------------------------------------------------------------------------

    def _entry(self, key: K) -> tuple[asyncio.Future[V], _Batch[K, V] | None]:
        """The key's future and, until it has settled, its batch; a key not yet asked for is
        queued by aiodataloader and joins the batch of that queue."""
        depth = calls.current_depth.get()
        if key not in self._futures:
            first = self._before_first_load
            if first is not None:
                self._before_first_load = None
                # What it loads is queued ahead of this key, in the same batch; for the request,
                # not for the field being resolved (EXPLAIN says so).
                outside_fields(first)
            shared = DataLoader.load(self, key)
            queue = dataloader_queue(self)
            batch = self._collecting
            if batch is None or batch.queue is not queue:
                batch = self._collecting = _Batch(queue, asyncio.get_running_loop().create_future())
            batch.keys.append(key)
            batch.futures.append(shared)
            self._batch_of[key] = batch
            self._asked_at[key] = depth
            explaining = EXPLAINING.get()  # once per key a request asks for: EXPLAIN notes who
            if explaining is not None:
                explaining.asked(self, key)
            return shared, batch
        if key in self._asked_at and depth > self._asked_at[key]:
            # Asked again, from deeper, before its batch went out: the batch waits on both.
            self._asked_at[key] = depth
        return self._futures[key], self._batch_of.get(key)

    async def batch_load_fn(self, keys: list[K]) -> list[V]:
        """aiodataloader's batch: ``fetch`` one round trip deeper than the deepest load among
        the keys, then settle their batch.

        The batch is settled by a callback scheduled as ``fetch`` returns or raises:
        aiodataloader then sets every key's result or exception without yielding to the loop,
        so the callback runs after all of them and after the callbacks they schedule: a
        consumer woken by ``settled`` finds every value set, and the consumers of single keys
        wake first. Every key of one dispatch came from one queue, so from one batch.
        """
        asked = self._asked_at
        depth = 1 + max((asked.pop(key, 0) for key in keys), default=0)
        self._depths.update(dict.fromkeys(keys, depth))
        batch = self._batch_of[keys[0]]
        try:
            batch_id = calls.new_batch(depth)
            explaining = EXPLAINING.get()
            if explaining is not None:
                explaining.batch(batch_id, self, keys)
            # aiodataloader's types have no per-key failure, but its dispatch fails the key of
            # an Exception value (and caches it, where a batch that raises clears its keys).
            return cast("list[V]", list(await self.fetch(keys)))
        finally:
            asyncio.get_running_loop().call_soon(self._settle, batch)

    def _settle(self, batch: _Batch[K, Any]) -> None:
        for key, future in zip(batch.keys, batch.futures, strict=True):
            if self._batch_of.get(key) is batch:
                del self._batch_of[key]
            if not future.done():
                # The batch's task was cancelled before aiodataloader set anything (the loop
                # shutting down): its keys are cancelled with it rather than left pending for ever.
                future.cancel()
            elif not future.cancelled():
                # Marked retrieved: its consumers each hold a shield or a batch, so when they
                # are all cancelled or gone nobody reads the shared future's exception, and
                # asyncio would log each one at collection ("Future exception was never
                # retrieved": one line per key of every failed batch).
                future.exception()
        if not batch.settled.done():
            batch.settled.set_result(None)


__all__ = ["SharedLoader"]
