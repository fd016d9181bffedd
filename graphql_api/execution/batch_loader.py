"""A request's DataLoader: the keys asked for in one stretch of the event loop, fetched as one batch.

A key's first load opens a batch, or joins the one being collected; the batch closes two
loop iterations after its first key and is fetched then, in a task of its own. The
resolvers woken in between (a level's sibling fields, whose awaitables complete together)
add their keys to it, so the loads of one nesting level go out together: one wave of
DynamoDB calls per level, however many parents. Every key is cached for the request: a key
is fetched once, and asked again it answers from its batch.

The loader owns its batches (``_Batch``), as Strawberry's own DataLoader does: a batch is
what every consumer of its keys waits on at once (``get_many``, ``deferred``), so it must be
known, not reconstructed from another library's queue. The schedule (two iterations, then
the fetch in a task) is the one aiodataloader's dispatch had, which the request and wave
counts of the bench were measured with.

No consumer can cancel a read for the others. Every consumer of a key shares one future,
and cancelling a task cancels the future it awaits: graphql-core cancels a field's pending
awaitables when a non-null sibling fails, which cancelled a read the caller check
(auth/active.py) was awaiting too, and the request ended in a plain-text 500. So ``load``
hands each consumer its own future (``asyncio.shield``), and ``get_many`` and a
``Deferred`` wait with ``asyncio.wait``, which never cancels what it waits for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from datastore import calls
from graphql_api.execution.fields import Deferred

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")


@dataclass(slots=True)
class _Batch(Generic[K, V]):
    """The keys of one batch, each with its one future, and the future settled when they all are."""

    settled: asyncio.Future[None]
    keys: list[K] = field(default_factory=list)
    futures: list[asyncio.Future[V]] = field(default_factory=list)
    # The fetch, held here so the loop's weak reference is not its only one.
    task: asyncio.Task[None] | None = None


class SharedLoader(Generic[K, V]):
    """Batched, cached reads of one kind for one request; a subclass says how a batch is fetched."""

    def __init__(self, *, before_first_load: Callable[[], None] | None = None) -> None:
        # Called once, just before the first key is asked for: what the request starts when it
        # first reaches for tenant data (request/session.py ``tenant_reached``).
        self._before_first_load = before_first_load
        # Each key's one future, and the batch it came in. A key whose batch failed is
        # dropped, so a later load fetches it afresh.
        self._keys: dict[K, tuple[asyncio.Future[V], _Batch[K, V]]] = {}
        self._collecting: _Batch[K, V] | None = None
        # The round trips behind each key (datastore.calls.current_depth): at the load, until
        # its batch is fetched; then its batch's depth, which the key's consumers take on.
        self._asked_at: dict[K, int] = {}
        self._depths: dict[K, int] = {}

    async def fetch(self, keys: list[K]) -> list[V]:
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

        return Deferred(None if shared.done() else batch.settled, value)

    async def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """Each distinct key of ``keys`` once, batched with every other load of this stretch.

        For a whole page at once (schema/types/relations.py): one wait on the batches the keys
        are in, rather than a coroutine, a future and a task per object. Waiting key by key put
        one callback per key on the loop (a Handle each), twice, which on Q2's 1,000
        application owners cost more than building the objects.
        """
        distinct = list(dict.fromkeys(keys))
        entries = [self._entry(key) for key in distinct]
        pending = {batch.settled for shared, batch in entries if not shared.done()}
        if pending:
            await asyncio.wait(pending)
        found = {key: shared.result() for key, (shared, _batch) in zip(distinct, entries, strict=True)}
        calls.waited(max((self._depths.get(key, 0) for key in distinct), default=0))
        return found

    # --- batches --------------------------------------------------------------------------

    def _entry(self, key: K) -> tuple[asyncio.Future[V], _Batch[K, V]]:
        """The key's future and batch; a key not yet asked for joins the batch being collected."""
        depth = calls.current_depth.get()
        entry = self._keys.get(key)
        if entry is None:
            first = self._before_first_load
            if first is not None:
                self._before_first_load = None
                first()  # what it loads is queued ahead of this key, in the same batch
            loop = asyncio.get_running_loop()
            batch = self._collecting
            if batch is None:
                batch = self._collecting = _Batch(loop.create_future())
                loop.call_soon(self._closing, batch)
            entry = (loop.create_future(), batch)
            batch.keys.append(key)
            batch.futures.append(entry[0])
            self._keys[key] = entry
            self._asked_at[key] = depth
        elif key in self._asked_at and depth > self._asked_at[key]:
            # Asked again, from deeper, before its batch went out: the batch waits on both.
            self._asked_at[key] = depth
        return entry

    def _closing(self, batch: _Batch[K, V]) -> None:
        # One more iteration: the resolvers woken in this one add their keys too.
        asyncio.get_running_loop().call_soon(self._close, batch)

    def _close(self, batch: _Batch[K, V]) -> None:
        if self._collecting is batch:
            self._collecting = None
        batch.task = asyncio.get_running_loop().create_task(self._fetch(batch))

    async def _fetch(self, batch: _Batch[K, V]) -> None:
        """``fetch`` one round trip deeper than the deepest load among the keys, then settle them.

        The batch's ``settled`` future is set by a callback scheduled before any key's value
        is set, so it runs after all of them and after the callbacks they schedule: a consumer
        woken by ``settled`` finds every value set, and the consumers of single keys wake first.
        """
        keys = batch.keys
        asked = self._asked_at
        depth = 1 + max((asked.pop(key, 0) for key in keys), default=0)
        self._depths.update(dict.fromkeys(keys, depth))
        loop = asyncio.get_running_loop()
        try:
            try:
                calls.new_batch(depth)
                values = list(await self.fetch(keys))
            finally:
                loop.call_soon(self._settle, batch)
            if len(values) != len(keys):
                raise TypeError(f"a batch of {len(keys)} keys was fetched as {len(values)} values")
        except Exception as error:
            # Nothing of a failed batch is kept: each key is fetched afresh when asked again.
            for key, future in zip(keys, batch.futures, strict=True):
                if self._keys.get(key, (None,))[0] is future:
                    del self._keys[key]
                if not future.done():
                    future.set_exception(error)
            return
        for future, value in zip(batch.futures, values, strict=True):
            if not future.done():
                if isinstance(value, Exception):
                    future.set_exception(value)
                else:
                    future.set_result(value)

    def _settle(self, batch: _Batch[K, Any]) -> None:
        for future in batch.futures:
            if not future.done():
                # The fetch was cancelled before any value was set (the loop shutting down):
                # its keys are cancelled with it rather than left pending for ever.
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
