"""`python -m bench.profile [Q1 ...] [-n N] [-c C] [--pyinstrument] [--naive] [--gc] [--loops] [--count]`: CPU cost.

The bench's timings are wall-clock on a shared machine; this measures what one request costs
the API process itself: the product app is served in this process (httpx's ASGI transport, the
whole middleware stack, the read path's DynamoDB client on the loop and boto3 on the I/O pool
for the rest), and CPU time is read with ``time.process_time`` (every thread of the process;
DynamoDB Local runs in its own, and its CPU per request over the run is printed beside: whether
a request's wall time waits on the engine or on this process). The figure is the median of N
requests after two warm-ups. With ``-c C`` (concurrency) C clients send the N requests at once,
one after another each, and the figures are per request over the whole run (CPU of the process
and of the loop's thread, divided by N): what a request costs under load, where the loop
interleaves C requests. With ``--pyinstrument`` the same requests run again under pyinstrument
(the event-loop thread; calls made on the I/O pool's threads count in the process's CPU less
the loop's) and the loop's CPU is split by the module each sample is in: where the time goes,
in ms per request. ``--naive`` serves the bench's naive variant instead (bench/naive.py),
measured the same way. ``--gc a/b`` (the collector's thresholds) and ``--loops asyncio/uvloop``
(the event loop; the servers run uvloop) compare variants in turn within this one process,
``--rounds N`` turns of them, so that what the machine's other processes do meanwhile reaches
every variant alike. ``--count`` then runs the same requests again counting what they hand the
event loop: tasks, futures and callbacks per request.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvloop

from bench import queries as q
from bench.dataset import Dataset, seeded
from bench.floor import Floor, stock_client
from bench.serve import RAISED_LIMITS
from bench.serving import SECRET, cpu_seconds
from bench.warmup import warm_up
from datastore.dev.local import DynamoDBLocal
from datastore.table.store import Datastore
from datastore.values import ids
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.entrypoints.heap import settle_heap
from graphql_api.settings import Settings


async def post(app: Any, token: str, body: dict[str, Any], datastore: Datastore) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        response = await client.post("/graphql", json=body, headers={"Authorization": f"Bearer {token}"})
        answer: dict[str, Any] = response.json()
    await datastore.aclose()
    return answer


@dataclass
class Timings:
    cpu: list[float] = field(default_factory=list)  # the whole process, ms per request
    loop: list[float] = field(default_factory=list)  # the event-loop thread alone
    wall: list[float] = field(default_factory=list)
    engine: float | None = None  # DynamoDB Local's CPU, ms per request over the run (None: no /proc)

    @property
    def io_threads(self) -> float:
        """Median CPU of the I/O pool's threads: boto3 (serialise, sign, send, parse)."""
        return statistics.median(c - loop for c, loop in zip(self.cpu, self.loop, strict=True))


class Counts:
    """What the loop is handed during the measured requests (``--count``, on asyncio's loop):
    tasks (a task factory: every ``create_task``, ``ensure_future`` of a coroutine and
    ``gather`` of one), futures made by ``loop.create_future`` (aiodataloader's per-key
    futures, ``shield``, ``wait``; not ``gather``'s own) and callbacks scheduled with
    ``call_soon`` (each a Handle: a task's every step, every future's done callbacks).
    An async generator the loop closes at collection (left unfinished) shows among the tasks
    twice: as ``async_generator_athrow`` and as ``aclose <its name>`` (the asyncgen finalizer
    hook, wrapped). Counted by wrapping three loop methods on the instance, so it costs a Python call each:
    the CPU figures of a counting run are not the bench's."""

    def __init__(self) -> None:
        self.tasks = self.futures = self.callbacks = 0
        # Where they come from: a task's coroutine, a future's maker (the frame that called).
        self.task_kinds: dict[str, int] = {}
        self.future_makers: dict[str, int] = {}

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        create_future, call_soon = loop.create_future, loop.call_soon

        def task_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
            self.tasks += 1
            kind = getattr(coro, "__qualname__", type(coro).__name__)
            self.task_kinds[kind] = self.task_kinds.get(kind, 0) + 1
            return asyncio.Task(coro, loop=loop, **kwargs)

        def counted_future() -> asyncio.Future[Any]:
            self.futures += 1
            caller = sys._getframe(1).f_code
            maker = f"{Path(caller.co_filename).parent.name}/{Path(caller.co_filename).name}:{caller.co_name}"
            self.future_makers[maker] = self.future_makers.get(maker, 0) + 1
            return create_future()

        def counted_call_soon(*args: Any, **kwargs: Any) -> asyncio.Handle:
            self.callbacks += 1
            return call_soon(*args, **kwargs)

        hooks = sys.get_asyncgen_hooks()
        finalize = hooks.finalizer

        def finalizer(agen: Any) -> None:
            # An async generator left unfinished, closed by the loop in a task of its own.
            kind = f"aclose {agen.__qualname__}"
            self.task_kinds[kind] = self.task_kinds.get(kind, 0) + 1
            if finalize is not None:
                finalize(agen)

        sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalizer)
        loop.set_task_factory(task_factory)
        # Instance attributes: asyncio's C futures and tasks look call_soon up on the loop object.
        loop.create_future = counted_future  # type: ignore[method-assign]
        loop.call_soon = counted_call_soon  # type: ignore[method-assign,assignment]

    def summary(self, n: int) -> str:
        return (
            f"per request: {self.tasks / n:.1f} tasks, {self.futures / n:.1f} loop futures, "
            f"{self.callbacks / n:.1f} call_soon callbacks\n    tasks: {self._top(self.task_kinds, n)}"
            f"\n    futures: {self._top(self.future_makers, n)}"
        )

    @staticmethod
    def _top(counted: dict[str, int], n: int) -> str:
        ranked = sorted(counted.items(), key=lambda item: -item[1])[:8]
        return ", ".join(f"{name} {count / n:.1f}" for name, count in ranked)


class Collections:
    """The cyclic garbage collector's runs meanwhile (``gc.callbacks``), by generation: each
    pause in CPU time of the thread that collected (what it costs; on a shared machine its
    wall time is mostly the other processes') and the longest in wall time too."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.started = (0.0, 0.0)
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.longest_wall = 0.0

    def callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = (time.thread_time(), time.perf_counter())
        else:
            cpu, wall = self.started
            self.pauses[info["generation"]].append((time.thread_time() - cpu) * 1000)
            self.longest_wall = max(self.longest_wall, (time.perf_counter() - wall) * 1000)

    def summary(self) -> str:
        every = [pause for pauses in self.pauses.values() for pause in pauses]
        counts = "/".join(str(len(self.pauses[generation])) for generation in (0, 1, 2))
        spent = "/".join(f"{sum(self.pauses[generation]):.0f}" for generation in (0, 1, 2))
        return (
            f"GC {counts} collections (gen 0/1/2), CPU {sum(every):.1f} ms ({spent} ms), "
            f"longest {max(every, default=0):.1f} ms CPU, {self.longest_wall:.1f} ms wall"
        )


async def run(
    app: Any,
    token: str,
    body: dict[str, Any],
    n: int,
    profiler: Any = None,
    *,
    concurrency: int = 1,
    close: Callable[[], Awaitable[None]] | None = None,
    counts: Counts | None = None,
    engine_pid: int | None = None,
) -> Timings:
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
    content = orjson.dumps(body)
    timings = Timings()
    async with httpx.AsyncClient(transport=transport, base_url="http://bench", headers=headers, timeout=120) as client:
        for _ in range(2):
            answer = orjson.loads((await client.post("/graphql", content=content)).content)
            if answer.get("errors"):
                raise RuntimeError(f"the query failed: {answer['errors'][0]['message']}")
        if profiler is not None:
            profiler.start()
        if counts is not None:
            counts.install(asyncio.get_running_loop())
        engine_at = _engine_cpu(engine_pid)
        if concurrency == 1:
            for _ in range(n):
                c, t, w = time.process_time(), time.thread_time(), time.perf_counter()
                (await client.post("/graphql", content=content)).raise_for_status()
                timings.cpu.append((time.process_time() - c) * 1000)
                timings.loop.append((time.thread_time() - t) * 1000)
                timings.wall.append((time.perf_counter() - w) * 1000)
        else:
            await concurrently(client, content, n, concurrency, timings)
        engine_after = _engine_cpu(engine_pid)
        if engine_at is not None and engine_after is not None:
            timings.engine = (engine_after - engine_at) * 1000 / n
        if profiler is not None:
            profiler.stop()
    if close is not None:
        await close()  # this loop's DynamoDB connections (asyncio.run makes a loop per run)
    return timings


def _engine_cpu(pid: int | None) -> float | None:
    """DynamoDB Local's CPU seconds so far (every thread: its JVM's collector and compiler too)."""
    if pid is None:
        return None
    try:
        return cpu_seconds(pid)
    except OSError:  # no /proc (not Linux)
        return None


async def concurrently(client: httpx.AsyncClient, content: bytes, n: int, concurrency: int, timings: Timings) -> None:
    """``n`` requests from ``concurrency`` clients at once; every request's CPU figure is the
    run's CPU over ``n`` (the loop interleaves them: one request's own share cannot be read)."""
    remaining = iter(range(n))

    async def worker() -> None:
        for _ in remaining:
            w = time.perf_counter()
            (await client.post("/graphql", content=content)).raise_for_status()
            timings.wall.append((time.perf_counter() - w) * 1000)

    c, t = time.process_time(), time.thread_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, loop = (time.process_time() - c) * 1000 / n, (time.thread_time() - t) * 1000 / n
    timings.cpu.extend([cpu] * n)
    timings.loop.extend([loop] * n)


def _engine(timings: Timings) -> str:
    return "" if timings.engine is None else f"; DynamoDB Local CPU ms per request {timings.engine:.1f}"


# Where the event loop's time goes, by the module a sample's innermost frame is in (first match).
CATEGORIES = [
    ("/graphql/validation/", "GraphQL validation"),
    ("/graphql/language/", "GraphQL parsing"),
    ("/graphql/execution/", "graphql-core execution (per field and object)"),
    ("/graphql/", "graphql-core types and scalars (serialising values)"),
    ("/strawberry/", "Strawberry (resolver wrappers, view, extensions)"),
    ("/graphql_api/limits/", "limits (cost, response size, ...)"),
    ("/graphql_api/schema/types/", "our types: building objects, relations, connections"),
    ("/graphql_api/execution/plan/", "compiled plan: completing the response's fields"),
    ("/graphql_api/execution/loaders.py", "DataLoader"),
    ("/graphql_api/execution/batch_loader.py", "DataLoader"),
    ("/graphql_api/", "our request handling (context, loaders, auth, cursors)"),
    ("/datastore/aws/connections.py", "DynamoDB client on the loop: HTTP (our connections, httptools)"),
    ("/datastore/", "datastore (on the loop)"),
    ("/aiodynamo/", "DynamoDB client on the loop: aiodynamo (sign, retry)"),
    ("/yarl/", "DynamoDB client on the loop: aiodynamo (sign, retry)"),
    ("/hmac.py", "DynamoDB client on the loop: aiodynamo (sign, retry)"),
    ("/json/", "DynamoDB client on the loop: aiodynamo (sign, retry)"),
    ("/asyncio/", "asyncio: futures, tasks, thread hand-off"),
    ("/concurrent/", "asyncio: futures, tasks, thread hand-off"),
    ("/threading.py", "asyncio: futures, tasks, thread hand-off"),
    ("/starlette/", "HTTP: Starlette + the in-process client"),
    ("/httpx/", "HTTP: Starlette + the in-process client"),
    ("/httpcore/", "HTTP: Starlette + the in-process client"),
    ("/jwt/", "token verification"),
    ("/cryptography/", "token verification"),
]


def categorise(profiler: Any) -> dict[str, float]:
    """Seconds of event-loop samples by category; waiting (await, idle poll) left out.

    A sample in a built-in function or in a frame's own code counts for the nearest frame
    with a source file above it (``orjson.dumps`` called by a limit counts as the limit).
    """
    totals: dict[str, float] = {}
    root = profiler.last_session.root_frame(trim_stem=False)
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        frame, above = stack.pop()
        path = frame.file_path if frame.file_path and not frame.file_path.startswith("<") else above
        if frame.identifier.startswith(("[await]", "epoll.poll", "[out-of-context]")):
            continue
        stack.extend((child, path) for child in frame.children)
        own = frame.time - sum(child.time for child in frame.children)
        if own <= 0 or not path or path.endswith("selectors.py"):
            continue
        name = next((label for marker, label in CATEGORIES if marker in path), None)
        if name is None:
            name = "other: " + Path(path).name
        totals[name] = totals.get(name, 0.0) + own
    return totals


def summary(name: str, timings: Timings, profiler: Any) -> None:
    loop = statistics.median(timings.loop)
    print(f"\n{name}: where one request's {statistics.median(timings.cpu):.1f} ms of CPU goes")
    print(f"  {timings.io_threads:7.1f} ms  I/O threads: boto3 calls (serialise, sign, HTTP, parse)")
    print(f"  {loop:7.1f} ms  event loop, of which:")
    totals = categorise(profiler)
    sampled = sum(totals.values())
    for label, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        share = seconds / sampled
        if share >= 0.01:
            print(f"  {'':9}{share * loop:7.1f} ms  {label}")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("names", nargs="*", default=["Q1", "Q2"])
    parser.add_argument("-n", type=int, default=20)
    parser.add_argument("-c", "--concurrency", type=int, default=1, help="clients sending at once")
    parser.add_argument("--pyinstrument", action="store_true", help="then profile: time by category")
    parser.add_argument("--tree", action="store_true", help="with --pyinstrument: print the call tree too")
    parser.add_argument("--naive", action="store_true", help="the naive variant (bench/naive.py), not the product")
    parser.add_argument(
        "--gc",
        metavar="YOUNG,MIDDLE,OLD[/...]",
        help="the collector's thresholds after settle_heap; several (a/b): each query runs under each in turn",
    )
    parser.add_argument(
        "--loops",
        default="asyncio",
        metavar="asyncio/uvloop",
        help="the event loop the requests run on (the servers run uvloop); both: each query on each in turn",
    )
    parser.add_argument("--rounds", type=int, default=1, help="with several --gc or --loops: how many turns")
    parser.add_argument(
        "--count",
        action="store_true",
        help="then count tasks, futures and call_soon callbacks per request (asyncio's loop; a run of its own)",
    )
    args = parser.parse_args()
    if args.naive:
        from bench.naive import install

        install()
    # As bench.serve: one tenant flat out, no tenant rate limit (its bucket would refuse raised costs).
    loaded = Settings.load(
        {
            **RAISED_LIMITS,
            "TENANT_COST_PER_SECOND": "0",
            "HR_ENV": "bench",
            "ALLOWED_HOSTS": "bench",  # the in-process client's base URL
            "JWT_SECRET": SECRET,
        }
    )
    base = loaded.datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-bench-{ids.new_id().lower()}")
        data: Dataset = seeded(settings)
        floor = Floor(stock_client(settings), settings.table_name, data)
        print(warm_up(local.pid, [floor.q1, floor.q2, floor.q3, floor.q4]), flush=True)
        api = loaded.api
        datastore = Datastore(settings)
        app = create_app(datastore, api)
        settle_heap()  # as the server does
        # Thresholds to compare, in turn within one process (the same minute, the same table):
        # on a shared machine, A/B runs minutes apart measure the neighbours as much as the change.
        thresholds = [tuple(int(part) for part in one.split(",")) for one in (args.gc or "").split("/") if one]
        loops = args.loops.split("/")
        variants = [(t, loop) for t in (thresholds or [gc.get_threshold()]) for loop in loops]
        turns = variants * args.rounds if len(variants) > 1 else variants
        tokens = {
            "admin": issue_token(api, subject=data.admin.emp_id, org_id=data.org_id, role="admin"),
            "profile": issue_token(api, subject=data.profile.emp_id, org_id=data.org_id, role="employee"),
        }
        known = {
            "Q1": ("admin", {"query": q.Q1}),
            "Q2": ("admin", {"query": q.Q2}),
            "Q3": ("profile", {"query": q.Q3}),
            "Q4": ("admin", {"query": q.q4(data)}),
            "Q7": ("admin", {"query": q.Q7}),
        }
        if "Q6" in args.names:
            afters = q.q6_cursors(lambda body: asyncio.run(post(app, tokens["admin"], body, datastore)))
            known["Q6"] = ("admin", {"query": q.q6(afters)})
        collections = Collections()
        gc.callbacks.append(collections.callback)
        for name, (threshold, loop) in ((name, turn) for name in args.names for turn in turns):
            caller, body = known[name]
            gc.set_threshold(*threshold)
            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy() if loop == "uvloop" else None)
            collections.reset()
            at: dict[str, Any] = {"concurrency": args.concurrency, "close": datastore.aclose, "engine_pid": local.pid}
            timings = asyncio.run(run(app, tokens[caller], body, args.n, **at))
            under = f" gc {','.join(map(str, threshold))}" if thresholds else ""
            under += f" on {loop}" if len(loops) > 1 or loop != "asyncio" else ""
            print(
                f"{name} c{args.concurrency}{under}: CPU ms median {statistics.median(timings.cpu):.1f} "
                f"(min {min(timings.cpu):.1f}; "
                f"event loop {statistics.median(timings.loop):.1f}, I/O threads {timings.io_threads:.1f}), "
                f"wall ms median {statistics.median(timings.wall):.1f}, n={args.n}{_engine(timings)}; "
                f"{collections.summary()}",
                flush=True,
            )
            if args.count:
                asyncio.set_event_loop_policy(None)  # asyncio's loop: its methods can be wrapped
                counts = Counts()
                asyncio.run(run(app, tokens[caller], body, args.n, counts=counts, **at))
                # The in-process client's own tasks and callbacks are in the count too.
                print(f"{name} c{args.concurrency} {counts.summary(args.n)}", flush=True)
            if args.pyinstrument:
                from pyinstrument import Profiler

                # Many requests interleave at concurrency: the loop thread's samples, not one task's.
                profiler = Profiler(interval=0.0005, async_mode="enabled" if args.concurrency == 1 else "disabled")
                asyncio.run(run(app, tokens[caller], body, args.n, profiler, **at))
                if args.tree:
                    print(profiler.output_text(unicode=True, color=False, time="percent_of_total"))
                summary(name, timings, profiler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
