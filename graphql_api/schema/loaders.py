"""Per-request DataLoaders: every read of a resolver goes through one of these.

The entity loader collects the ids asked for in one event-loop turn, of every kind, into
one GetItem or BatchGetItem calls;
the list loader collects every list page asked for and runs their single-partition Queries
concurrently. Each batch returns only when all of its calls are done, so the next level's
loads all start in one turn and batch together again: one wave of DynamoDB calls per
nesting level, however many parents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, TypeVar, cast

from aiodataloader import DataLoader

from datastore import applications, audit, by_id, calls, departments, employees, jobs
from datastore.by_id import Kind
from datastore.entities import Application, AuditEvent, Department, Employee, JobPosting, Organization, Subscription
from datastore.pagination import Page, PageRequest, StartKey
from datastore.table import Table
from graphql_api.execution.fields import Deferred

P = ParamSpec("P")
R = TypeVar("R")
K = TypeVar("K")
V = TypeVar("V")

Runner = Callable[..., Awaitable[Any]]
"""Runs a blocking function off the event loop: ``await run(fn, *args)``."""

ListFetch = Callable[[Table, str | None, PageRequest], Page[Any]]


@dataclass(frozen=True, slots=True)
class ListKey:
    """One page of one list: which list, whose (parent id), and which page."""

    fetch: ListFetch
    parent: str | None
    first: int
    after: tuple[tuple[str, str], ...] | None
    descending: bool

    def request(self) -> PageRequest:
        after: StartKey | None = None if self.after is None else dict(self.after)
        return PageRequest(first=self.first, after=after, descending=self.descending)


def list_key(fetch: ListFetch, parent: str | None, first: int, after: StartKey | None, descending: bool) -> ListKey:
    return ListKey(fetch, parent, first, None if after is None else tuple(sorted(after.items())), descending)


class SharedLoader(DataLoader[K, V]):
    """A DataLoader whose futures no consumer can cancel for the others, settled a batch at a time.

    aiodataloader hands every consumer of a key the same cached future, and cancelling a task
    cancels the future it awaits: graphql-core cancels a field's pending awaitables when a
    non-null sibling fails, which cancelled a read the caller check (active.py) was awaiting
    too, and the request ended in a plain-text 500. So each consumer gets its own future
    (``asyncio.shield``), and ``get_many`` waits with ``asyncio.wait``, which never cancels
    what it waits for.

    ``get_many`` waits on the batches its keys are in, not on each key: every key of a
    dispatch shares one *turn* future, settled once the batch's values are all set. Waiting
    key by key put one callback per key on the loop (a Handle each), twice, which on Q2's
    1,000 application owners cost more than building the objects.
    """

    def __init__(self) -> None:
        super().__init__()
        # A turn is one dispatch queue sent as one batch, and a key's turn is found by the key:
        # aiodataloader must neither cut a queue into several batches nor reload a queued key
        # (it clears a key only when its batch has failed, after that batch was sent; nothing
        # here calls ``clear``).
        if self.max_batch_size or not self.cache:
            raise TypeError("a SharedLoader batches whole queues and caches every key")
        # The round trips behind each key (datastore.calls.current_depth): at the load, until
        # its batch is dispatched; then its batch's depth, which the key's consumers take on.
        self._asked_at: dict[K, int] = {}
        self._depths: dict[K, int] = {}
        # The turn of each key whose batch has not settled, and the queue it is being
        # collected into (aiodataloader's ``_queue``, swapped for a new list at dispatch).
        self._turn_of: dict[K, _Turn] = {}
        self._collecting: _Turn | None = None

    def load(self, key: K) -> asyncio.Future[V]:
        shared = self._shared(key)
        return shared if shared.done() else asyncio.shield(shared)

    async def fetch(self, keys: list[K]) -> list[V]:
        """The values of one batch's ``keys``, in order: the one call a subclass makes."""
        raise NotImplementedError

    async def batch_load_fn(self, keys: list[K]) -> list[V]:
        """aiodataloader's batch: ``fetch`` one round trip deeper than the deepest load among
        the keys, then settle their turn.

        The turn is settled by a callback scheduled as ``fetch`` returns or raises:
        aiodataloader then sets every key's result or exception without yielding to the
        loop, so the callback runs after all of them. Every key of one dispatch came from one
        queue, so from one turn: a key's turn changes only when it is loaded afresh, after
        a failed batch has cleared it from the cache, which is after its dispatch.
        """
        asked = self._asked_at
        depth = 1 + max((asked.pop(key, 0) for key in keys), default=0)
        self._depths.update(dict.fromkeys(keys, depth))
        turn = self._turn_of[keys[0]]
        try:
            calls.new_batch(depth)
            return await self.fetch(keys)
        finally:
            asyncio.get_running_loop().call_soon(self._settle, turn)

    def _settle(self, turn: _Turn) -> None:
        for key, future in turn.keys:
            if self._turn_of.get(key) is turn:
                del self._turn_of[key]
            if not future.done():
                # The batch's task was cancelled before aiodataloader set anything (the loop
                # shutting down): its keys are cancelled with it rather than left pending for
                # ever, and stay so in the cache, as the request is ending anyway.
                future.cancel()
            elif not future.cancelled():
                # Marked retrieved: its consumers each hold a shield or a turn, so when they
                # are all cancelled or gone nobody reads the shared future's exception, and
                # asyncio would log each one at collection ("Future exception was never
                # retrieved": one line per key of every failed batch).
                future.exception()
        if not turn.settled.done():
            turn.settled.set_result(None)

    def _shared(self, key: K) -> asyncio.Future[V]:
        """The key's one future; a fresh one joins the turn its dispatch queue belongs to."""
        fresh = self.get_cache_key(key) not in self._cache
        shared = super().load(key)
        depth = calls.current_depth.get()
        if fresh:
            turn = self._collecting
            if turn is None or turn.queue is not self._queue:
                turn = self._collecting = _Turn(self._queue, asyncio.get_running_loop().create_future())
            turn.keys.append((key, shared))
            self._turn_of[key] = turn
            self._asked_at[key] = depth
        elif key in self._asked_at and depth > self._asked_at[key]:
            # Asked again, from deeper, before its batch went out: the batch waits on both.
            self._asked_at[key] = depth
        return shared

    async def get(self, key: K) -> V:
        value = await self.load(key)
        calls.waited(self._depths.get(key, 0))
        return value

    def deferred(self, key: K, then: Callable[[V], R]) -> Deferred[R]:
        """``then`` of the key's value, batched with every other load of this turn, for a field
        that declares its load (execution/fields.py ``loaded``): the fields of a level wait once per
        batch, not once per key (as ``get_many``), and no coroutine is made for a key."""
        shared = self._shared(key)
        depths = self._depths

        def value() -> R:
            found = shared.result()  # raises what the batch raised
            calls.waited(depths.get(key, 0))
            return then(found)

        return Deferred(None if shared.done() else self._turn_of[key].settled, value)

    async def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """Each distinct key of ``keys`` once, batched with every other load of this turn.

        For a whole page at once (types/relations.py): one wait on the batches the keys are
        in, rather than a coroutine, a future and a task per object.
        """
        distinct = list(dict.fromkeys(keys))
        shared = [self._shared(key) for key in distinct]
        turn_of = self._turn_of
        turns = {turn_of[key].settled for key, future in zip(distinct, shared, strict=True) if not future.done()}
        if turns:
            await asyncio.wait(turns)
        found = {key: future.result() for key, future in zip(distinct, shared, strict=True)}
        calls.waited(max((self._depths.get(key, 0) for key in distinct), default=0))
        return found


@dataclass(slots=True)
class _Turn:
    """The keys of one dispatch of a SharedLoader, and the future settled when they are."""

    queue: list[Any]  # aiodataloader's queue they were collected into
    settled: asyncio.Future[None]
    keys: list[tuple[Any, asyncio.Future[Any]]] = field(default_factory=list)


class Loader(SharedLoader[K, V]):
    """A DataLoader whose batch runs one blocking datastore call off the loop."""

    def __init__(self, run: Runner, batch: Callable[[list[K]], Sequence[V]]) -> None:
        super().__init__()
        self._run = run
        self._batch = batch

    async def fetch(self, keys: list[K]) -> list[V]:
        return list(await self._run(self._batch, keys))


class EntityLoader(SharedLoader[tuple[Kind, Any], Any]):
    """Every entity read by id of one loop turn, whatever its kind, in one batch.

    One key is a GetItem, more go whole to ``datastore.by_id`` in one hop to the I/O pool,
    which cuts them into BatchGetItem calls of at most 100 keys (``Table.batch_get``). The
    caller check's organisation and employee thus share a call with the query's own reads.
    """

    def __init__(self, run: Runner, table: Table) -> None:
        super().__init__()
        self._run = run
        self._table = table

    async def fetch(self, keys: list[tuple[Kind, Any]]) -> list[Any]:
        return list(await self._run(by_id.get_by_id, self._table, keys))


class Entities(Generic[K, V]):
    """One kind's view of the request's entity loader: ``get``/``get_many`` by that kind's id."""

    def __init__(self, loader: EntityLoader, kind: Kind) -> None:
        self._loader = loader
        self._kind = kind

    def load(self, key: K) -> asyncio.Future[V]:
        return self._loader.load((self._kind, key))

    async def get(self, key: K) -> V:
        return cast(V, await self._loader.get((self._kind, key)))

    def deferred(self, key: K, then: Callable[[V], R]) -> Deferred[R]:
        return self._loader.deferred((self._kind, key), cast(Callable[[Any], R], then))

    async def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        kind = self._kind
        found = await self._loader.get_many((kind, key) for key in keys)
        return {key: value for (_, key), value in found.items()}


class ListLoader(SharedLoader[ListKey, Page[Any]]):
    """Pages of lists; the Queries of one batch run concurrently and finish together."""

    def __init__(self, run: Runner, table: Table) -> None:
        super().__init__()
        self._run = run
        self._table = table

    async def fetch(self, keys: list[ListKey]) -> list[Page[Any]]:
        return list(
            await asyncio.gather(*(self._run(key.fetch, self._table, key.parent, key.request()) for key in keys))
        )

    async def page(self, key: ListKey) -> Page[Any]:
        return await self.get(key)


# --- list fetchers: (table, parent id, page request) -> page ----------------------------------


def departments_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[Department]:
    return departments.list_departments(table, request)


def employees_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[Employee]:
    return employees.list_employees(table, request)


def employees_by_name(table: Table, prefix: str | None, request: PageRequest) -> Page[Employee]:
    assert prefix is not None
    return employees.list_employees_by_name(table, prefix, request)


def employees_of_department(table: Table, dept_id: str | None, request: PageRequest) -> Page[Employee]:
    assert dept_id is not None
    return employees.list_department_employees(table, dept_id, request)


def open_jobs_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[JobPosting]:
    return jobs.list_open_jobs(table, request)


def jobs_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[JobPosting]:
    return jobs.list_jobs(table, request)


def applications_of_job(table: Table, job_id: str | None, request: PageRequest) -> Page[Application]:
    assert job_id is not None
    return applications.list_job_applications(table, job_id, request)


def applications_of_employee(table: Table, emp_id: str | None, request: PageRequest) -> Page[Application]:
    assert emp_id is not None
    return applications.list_employee_applications(table, emp_id, request)


def audit_events_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[AuditEvent]:
    """Newest first, whatever ``request.descending`` says."""
    return audit.list_audit_events(table, request)


class Loaders:
    """The DataLoaders of one request, for one tenant. Never shared between requests."""

    def __init__(self, table: Table, run: Runner) -> None:
        self.table = table
        self.entities = EntityLoader(run, table)
        self.organization: Entities[str, Organization | None] = Entities(self.entities, Kind.ORGANIZATION)
        self.subscription: Entities[str, Subscription | None] = Entities(self.entities, Kind.SUBSCRIPTION)
        self.employee: Entities[str, Employee | None] = Entities(self.entities, Kind.EMPLOYEE)
        self.department: Entities[str, Department | None] = Entities(self.entities, Kind.DEPARTMENT)
        self.job: Entities[str, JobPosting | None] = Entities(self.entities, Kind.JOB)
        self.application: Entities[tuple[str, str], Application | None] = Entities(self.entities, Kind.APPLICATION)
        self.employee_id_by_email: Loader[str, str | None] = Loader(
            run,
            lambda emails: [employees.find_employee_id_by_email(table, e) for e in emails],
        )
        self.lists = ListLoader(run, table)
