"""A record of every DynamoDB call: botocore's event hooks record the boto3 client's, and the
event loop's client records its own the same way (``begin``, ``finish``, ``fail``).

Calls are recorded into the CallLog of the current context (one per GraphQL request, so a
response can state its own cost) and into any global listener (tests that assert exact
counts across threads).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from datastore.tenancy import keys

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_CONTEXT_KEY = "hr_call"
T = TypeVar("T")


@dataclass(slots=True)
class Call:
    operation: str
    params: dict[str, Any]
    started: float
    finished: float | None = None
    read_units: float = 0.0
    write_units: float = 0.0
    items: int = 0
    error: str | None = None
    # The loader batch that issued the call (None outside one) and when it was dispatched:
    # calls of one batch are one round trip, however the thread pool spreads them.
    batch: int | None = None
    dispatched: float | None = None
    # The batch's depth: how many round trips the loads it carries waited on, one after
    # another, plus one (``new_batch``). None outside a batch.
    depth: int | None = None

    def partition_keys(self) -> list[str]:
        """Every partition key (table or index) this call addressed."""
        return list(_partition_keys(self.operation, self.params))


@dataclass
class CallLog:
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def snapshot(self) -> list[Call]:
        with self._lock:
            return list(self.calls)

    def count(self, operation: str | None = None) -> int:
        return sum(1 for c in self.snapshot() if operation is None or c.operation == operation)

    def operations(self) -> list[str]:
        return [c.operation for c in self.snapshot()]

    def take_finished(self) -> list[Call]:
        """The calls that have finished, removed from the log (those in flight stay)."""
        with self._lock:
            finished = [c for c in self.calls if c.finished is not None]
            self.calls[:] = [c for c in self.calls if c.finished is None]
        return finished

    def waves(self) -> list[list[Call]]:
        """Calls grouped into sequential rounds: the levels of the critical path.

        Meant for one request's log (a log spanning several requests merges their waves).
        When every call came from a loader batch, each knows its depth (the round trips the
        loads it carries waited on, one after another: ``waited``), and that is its wave:
        two independent chains of reads, one of which finished early, are still two chains
        of the same length, not one long one. Otherwise (any lone call: a write, a persisted
        document's lookup, the floor's hand-written calls) the waves are read from timings:

        The unit is a loader batch (all calls one DataLoader dispatch issued), starting when the
        event loop dispatched it, or a lone call made outside any batch. A unit's level is one
        more than the highest level of any unit that finished before it started: a call that
        could not start until another ended is a round trip later, while a call that merely
        overlaps a slow, unrelated one is not. Batches are the unit, timed from dispatch,
        because their calls go through a bounded thread pool: a batch of 1,000 Queries, or two
        batches dispatched together, must not look sequential because a thread started late.
        """
        snapshot = self.snapshot()
        batched = [(call.depth, call) for call in snapshot if call.depth is not None]
        if snapshot and len(batched) == len(snapshot):
            by_depth: dict[int, list[Call]] = {}
            for depth, call in batched:
                by_depth.setdefault(depth, []).append(call)
            return [by_depth[depth] for depth in sorted(by_depth)]
        units: dict[object, list[Call]] = {}
        for index, call in enumerate(snapshot):
            units.setdefault(("batch", call.batch) if call.batch is not None else index, []).append(call)
        spans = sorted(
            (
                (
                    min(c.dispatched if c.dispatched is not None else c.started for c in members),
                    max(c.finished or c.started for c in members),
                    members,
                )
                for members in units.values()
            ),
            key=lambda span: span[0],
        )
        levels: dict[int, list[Call]] = {}
        running: list[tuple[float, int]] = []  # (finish, level) of units not yet known finished
        finished_level = 0  # highest level among units finished before the current start
        for started, finished, members in spans:
            while running and running[0][0] <= started:
                finished_level = max(finished_level, heapq.heappop(running)[1])
            level = finished_level + 1
            heapq.heappush(running, (finished, level))
            levels.setdefault(level, []).extend(members)
        return [levels[level] for level in sorted(levels)]


current_log: ContextVar[CallLog | None] = ContextVar("current_dynamodb_call_log", default=None)


@dataclass
class Meter:
    """What a long job (an export, a restore, an offboarding) has consumed so far.

    Its calls are recorded into its own log while ``metered`` runs the job's steps, and
    ``settle`` adds up those that finished and forgets them, so a job of a million calls
    holds only the few in flight.
    """

    log: CallLog = field(default_factory=CallLog)
    calls: int = 0
    read_units: float = 0.0
    write_units: float = 0.0

    def settle(self) -> float:
        """Add up the calls finished since the last settle; the read units they consumed."""
        finished = self.log.take_finished()
        read = sum(call.read_units for call in finished)
        self.calls += len(finished)
        self.read_units += read
        self.write_units += sum(call.write_units for call in finished)
        return read


async def metered(steps: AsyncIterator[T], meter: Meter) -> AsyncIterator[T]:
    """``steps``, each run with ``meter``'s log as the context's: tasks a step starts copy the
    context, so their calls are counted too."""
    while True:
        token = current_log.set(meter.log)
        try:
            step = await anext(steps)
        except StopAsyncIteration:
            return
        finally:
            current_log.reset(token)
        yield step


@contextmanager
def metering(meter: Meter) -> Iterator[None]:
    """The calls made meanwhile in this context (and the pools it hands work to) counted in
    ``meter``: a job's single steps, as ``metered`` does for its iterator's."""
    token = current_log.set(meter.log)
    try:
        yield
    finally:
        current_log.reset(token)


class Batch(NamedTuple):
    """The loader batch the calls of this context belong to."""

    batch: int
    dispatched: float  # time.perf_counter() when the event loop dispatched it
    depth: int


current_batch: ContextVar[Batch | None] = ContextVar("current_dynamodb_batch", default=None)
# How many loader round trips the current code has waited on, one after another: a load made
# here joins a batch one deeper. Set by the loaders when a load's result is handed back.
current_depth: ContextVar[int] = ContextVar("current_dynamodb_depth", default=0)
_batch_ids = itertools.count(1)


def new_batch(depth: int = 1) -> int:
    """Mark the calls made from here on in this context as one loader batch, dispatched now,
    at ``depth`` (1 for loads that waited on nothing)."""
    batch = next(_batch_ids)
    current_batch.set(Batch(batch, time.perf_counter(), depth))
    return batch


def waited(depth: int) -> None:
    """The current code has the result of a batch at ``depth``: what it loads next is deeper."""
    if depth > current_depth.get():
        current_depth.set(depth)


_listeners: list[CallLog] = []
_listeners_lock = threading.Lock()


@contextmanager
def listening() -> Iterator[CallLog]:
    """Record every call made by an instrumented client, from any thread, meanwhile."""
    log = CallLog()
    with _listeners_lock:
        _listeners.append(log)
    try:
        yield log
    finally:
        with _listeners_lock:
            _listeners.remove(log)


def instrument(client: DynamoDBClient) -> DynamoDBClient:
    """Register the recording hooks on ``client`` (once)."""
    events = client.meta.events
    events.register("before-parameter-build.dynamodb", _before, unique_id="hr-calls-before")
    events.register("after-call.dynamodb", _after, unique_id="hr-calls-after")
    events.register("after-call-error.dynamodb", _after_error, unique_id="hr-calls-error")
    return client


def _before(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
    call = begin(model.name, params)
    if call is not None:
        context[_CONTEXT_KEY] = call


def _after(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    call: Call | None = context.get(_CONTEXT_KEY)
    if call is not None:
        finish(call, parsed)


def _after_error(context: dict[str, Any], exception: Exception | None = None, **_: Any) -> None:
    call: Call | None = context.get(_CONTEXT_KEY)
    if call is not None:
        fail(call, type(exception).__name__ if exception is not None else "error")


# --- what either client records (botocore's hooks above; datastore/aws/client.py) ------------


def begin(operation: str, params: dict[str, Any]) -> Call | None:
    """A call starting now, recorded in this context's CallLog and every listener; None when
    nothing is listening (nothing to fill in after)."""
    log = current_log.get()
    with _listeners_lock:
        sinks = [*_listeners, *([log] if log is not None else [])]
    if not sinks:
        return None
    batch = current_batch.get()
    call = Call(operation, dict(params), time.perf_counter())
    if batch is not None:
        call.batch, call.dispatched, call.depth = batch
    for sink in sinks:
        sink.add(call)
    return call


def finish(call: Call, parsed: dict[str, Any]) -> None:
    """``call`` answered ``parsed``: its end, the capacity it consumed and the items it read."""
    call.finished = time.perf_counter()
    consumed = parsed.get("ConsumedCapacity")
    for entry in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
        units = float(entry.get("CapacityUnits", 0.0))
        read = entry.get("ReadCapacityUnits")
        write = entry.get("WriteCapacityUnits")
        if read is None and write is None:
            # DynamoDB reports only the total for some calls; reads are reads, writes writes.
            if call.operation in _WRITE_OPERATIONS:
                call.write_units += units
            else:
                call.read_units += units
        else:
            call.read_units += float(read or 0.0)
            call.write_units += float(write or 0.0)
    if "Items" in parsed:
        call.items += len(parsed["Items"])
    elif "Item" in parsed:
        call.items += 1
    for found in parsed.get("Responses", {}).values() if call.operation == "BatchGetItem" else []:
        call.items += len(found)


def fail(call: Call, error: str) -> None:
    """``call`` ended without an answer; ``error`` names why (the server log's words)."""
    call.finished = time.perf_counter()
    call.error = error


_WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


def _partition_keys(operation: str, params: dict[str, Any]) -> Iterator[str]:
    def of_key(key: dict[str, Any]) -> Iterator[str]:
        value = key.get(keys.PK, {}).get("S")
        if value is not None:
            yield value

    if operation in ("GetItem", "UpdateItem", "DeleteItem"):
        yield from of_key(params["Key"])
    elif operation == "PutItem":
        yield from of_key(params["Item"])
    elif operation == "Query":
        yield params["ExpressionAttributeValues"][":pk"]["S"]
    elif operation == "BatchGetItem":
        for request in params["RequestItems"].values():
            for key in request["Keys"]:
                yield from of_key(key)
    elif operation == "TransactWriteItems":
        for entry in params["TransactItems"]:
            for body in entry.values():
                yield from of_key(body.get("Key") or body.get("Item") or {})
