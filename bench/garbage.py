"""`python -m bench.garbage [-n N]`: what each kind of request leaves to the cyclic garbage collector.

What reference counting frees goes as a request ends; what sits in a reference cycle stays
until a young collection finds it, having scanned and promoted everything else alive by
then (graphql_api/entrypoints/heap.py). This serves the app under uvicorn in this process
(httptools, as the servers run), on a fresh in-memory DynamoDB Local with the bench's data,
and sends it N requests of each kind from a plain socket client (which makes no cycles of
its own) with the collector off; then one collection, keeping what it finds, counts the
objects those requests left, by type. The kinds: Q3 and Q1 (planned queries), a mutation's
refusal (graphql-core runs mutations) and a document that fails validation.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections import Counter
from typing import Any

import orjson
import uvicorn
import uvloop

from bench.in_process import in_process
from bench.queries import Q1, Q3
from datastore.dev.local import free_port
from datastore.table.store import Datastore
from graphql_api.app import create_app

# Each kind: the caller, the document, and whether its answer carries errors (checked: otherwise
# the requests measured something other than what the kind names, a refused host or token, say).
KINDS = {
    "Q3 (planned)": ("profile", Q3, False),
    "Q1 (planned)": ("admin", Q1, False),
    "a mutation (graphql-core)": (
        "profile",
        'mutation { terminateEmployee(input: {id: "x"}) { employee { id } } }',
        True,
    ),
    "an invalid document": ("profile", "{ me { nope } }", True),
}


def request_bytes(token: str, query: str) -> bytes:
    body = orjson.dumps({"query": query})
    head = (
        f"POST /graphql HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def left_behind(app: Any, requests: dict[str, tuple[bytes, bool]], n: int) -> dict[str, Counter[str]]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, http="httptools", log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110  # uvicorn sets a flag, no event to wait on
        await asyncio.sleep(0.05)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def send(request: bytes) -> bool:
        """Whether the answer carries GraphQL errors, once its whole body is read."""
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        return bool(orjson.loads(await reader.readexactly(length)).get("errors"))

    found: dict[str, Counter[str]] = {}
    try:
        for kind, (request, errors) in requests.items():
            for _ in range(20):  # warm: documents cached, connections made
                if await send(request) is not errors:
                    raise RuntimeError(f"{kind}: the answer {'lacks' if errors else 'carries'} errors")
            gc.collect()
            gc.disable()
            try:
                for _ in range(n):
                    await send(request)
                gc.set_debug(gc.DEBUG_SAVEALL)  # what the collection finds stays in gc.garbage
                gc.collect()
                found[kind] = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage)
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                gc.enable()
    finally:
        writer.close()
        server.should_exit = True
        await serving
    return found


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.garbage")
    parser.add_argument("-n", type=int, default=200)
    args = parser.parse_args()
    with in_process(cost_in_response=False) as bench:
        app = create_app(Datastore(bench.settings), bench.api)
        tokens = {"admin": bench.admin, "profile": bench.profile}
        requests = {
            kind: (request_bytes(tokens[caller], query), errors) for kind, (caller, query, errors) in KINDS.items()
        }
        found = uvloop.run(left_behind(app, requests, args.n))
    print(f"objects left to the cyclic collector, per request ({args.n} requests of each kind, uvicorn, in process)")
    for kind, counted in found.items():
        total = sum(counted.values())
        top = ", ".join(f"{name} {count / args.n:.1f}" for name, count in counted.most_common(4))
        print(f"  {kind:28} {total / args.n:7.1f}{'  (' + top + ')' if top else ''}")


if __name__ == "__main__":
    main()
