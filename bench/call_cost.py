"""`python -m bench.call_cost`: where one DynamoDB call's CPU goes in the product's client.

``python -m bench.http_session`` gives one call's CPU by transport; this splits the product's
own call into its stages: each botocore event with its handlers (``request-created`` signs
the request, ``needs-retry`` runs the retry checks, ``before-parse`` is
``datastore/fastparse.py``), the HTTP exchange (``datastore/http_session.py``, timed around
the session's ``send``), and botocore's code between them (the rest: building, preparing
and resolving the request's endpoint, the response object, the client method itself).

GetItem (one small item) and Query (50 items of about 200 bytes), one call after another on
one thread against a fresh DynamoDB Local. Times are this thread's CPU
(``time.thread_time``), exclusive of the stages nested in a stage (``request-created``'s
signer emits ``choose-signer`` and ``before-sign``). The timing hooks cost CPU of their own,
so the call's CPU without them is printed first, and the stages add up to the call with them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bench.http_session import one_call_each
from bench.warmup import warm_up
from datastore import calls, ids, library_internals
from datastore.client import make_client
from datastore.dev.local import DynamoDBLocal
from graphql_api.settings import Settings

CALLS, WARM = 2000, 300
HTTP = "HTTP exchange (libcurl)"


class Stages:
    """Exclusive CPU per stage, over the calls made while installed on a client."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self._children: list[float] = []  # the nested stages' time, per open stage

    def timed(self, fn: Callable[..., Any], stage: Callable[..., str]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._children.append(0.0)
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.thread_time() - started
                nested = self._children.pop()
                name = stage(*args)
                self.totals[name] = self.totals.get(name, 0.0) + elapsed - nested
                if self._children:
                    self._children[-1] += elapsed

        return wrapper

    def install(self, client: Any) -> None:
        events = client.meta.events

        def event(name: str, *_: Any) -> str:
            # "request-created.dynamodb.GetItem" -> "request-created": the operation is in the table's heading.
            return name.split(".")[0]

        events.emit = self.timed(events.emit, event)
        events.emit_until_response = self.timed(events.emit_until_response, event)
        session = library_internals.http_session(client)
        session.send = self.timed(session.send, lambda *_: HTTP)


def per_call(call: Callable[[], Any], count: int) -> float:
    """Microseconds of this thread's CPU per call, after WARM calls."""
    for _ in range(WARM):
        call()
    started = time.thread_time()
    for _ in range(count):
        call()
    return (time.thread_time() - started) / count * 1e6


def main() -> None:
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-cost-{ids.new_id().lower()}")
        # Instrumented, as the server's client is (Datastore.connect): the call log's hooks are part of a call.
        client = calls.instrument(make_client(settings))
        stock = make_client(settings, stock=True)
        get, query = one_call_each(client, settings.table_name)
        operations: dict[str, Callable[[Any], Any]] = {"GetItem": get, "Query": query}
        print(warm_up(local.pid, [lambda call=call: call(stock) for call in operations.values()]), flush=True)
        plain = {name: per_call(lambda call=call: call(client), CALLS) for name, call in operations.items()}
        stages = Stages()
        stages.install(client)
        by_operation: dict[str, dict[str, float]] = {}
        for name, call in operations.items():
            for _ in range(WARM):
                call(client)
            stages.totals.clear()
            started = time.thread_time()
            for _ in range(CALLS):
                call(client)
            whole = (time.thread_time() - started) / CALLS * 1e6
            parts = {stage: total / CALLS * 1e6 for stage, total in stages.totals.items()}
            parts["botocore between the events (the rest)"] = whole - sum(parts.values())
            by_operation[name] = {"the whole call, with the timing hooks": whole, **parts}
        print(f"\nus of CPU per call{'':40}" + "".join(f"{name:>10}" for name in operations))
        print(f"{'the whole call, no timing hooks':58}" + "".join(f"{plain[name]:>10.0f}" for name in operations))
        rows = sorted(
            {stage for parts in by_operation.values() for stage in parts},
            key=lambda stage: -max(parts.get(stage, 0.0) for parts in by_operation.values()),
        )
        for stage in rows:
            print(f"{stage:58}" + "".join(f"{by_operation[name].get(stage, 0.0):>10.0f}" for name in operations))


if __name__ == "__main__":
    main()
