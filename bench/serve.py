"""One API server for the bench: ``python -m bench.serve PORT [--naive] [--default-limits] [--workers N]``.

The product app (graphql_api.app.create_app) on DYNAMODB_ENDPOINT / HR_TABLE_NAME. The document
limits are raised so the bench's queries (100 aliases, 20 x 50 nesting, Q7's cost of ~11.8k)
are admitted, except with ``--default-limits`` (Q6: the most the defaults admit). With
``--workers N`` uvicorn runs N worker processes that each build the app from the environment
(graphql_api/entrypoints/asgi.py), as ``WORKERS=N server.py`` does.
The tenant rate limit is off unless the environment sets it (bench.fairness does). The server runs
httptools on uvloop, as `server.py run` does; HTTP_IMPLEMENTATION=h11 gives the pure-Python parser
on asyncio's loop, to compare the two.
"""

from __future__ import annotations

import argparse

import uvicorn

from datastore.table.store import Datastore
from graphql_api.app import create_app
from graphql_api.entrypoints.heap import settle_heap
from graphql_api.entrypoints.serving import uvicorn_options, worker_options
from graphql_api.settings import Settings, hand_down_to_workers

# The bench's queries are larger than the product's defaults admit.
RAISED_LIMITS = {
    "MAX_ALIASES": "200",
    "MAX_QUERY_COST": "1000000",
    "MAX_TOKENS": "100000",
    "MAX_BODY_BYTES": "1000000",
    "MAX_DYNAMODB_CALLS": "100000",
    "MAX_QUERY_DEPTH": "20",
    # Q7 (about 1.5 s alone) at concurrency 16 waits its turn well past the 10 s default.
    "REQUEST_TIMEOUT_SECONDS": "120",
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.serve")
    parser.add_argument("port", type=int)
    parser.add_argument("--naive", action="store_true")
    parser.add_argument("--default-limits", action="store_true")
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    if args.naive:
        from bench.naive import install

        install()
    # Defaults only: a scenario that measures a limit (bench.fairness) sets its own.
    defaults = {} if args.default_limits else dict(RAISED_LIMITS)
    # The latency tables measure one tenant flat out: no tenant rate limit unless asked for.
    defaults.setdefault("TENANT_COST_PER_SECOND", "0")
    if args.workers:
        hand_down_to_workers(dynamodb_endpoint=None, metrics_dir=None, defaults=defaults)
        uvicorn.run(
            "graphql_api.entrypoints.asgi:app",
            workers=args.workers,
            host="127.0.0.1",
            port=args.port,
            log_level="warning",
            access_log=False,
            **worker_options(Settings.load(defaults=defaults).api),
        )
        return
    settings = Settings.load(defaults=defaults)
    datastore = Datastore.connect(settings.datastore)
    app = create_app(datastore, settings.api)
    settle_heap()  # as every server process does once its app is built
    # The server's own parser and loop (HTTP_IMPLEMENTATION; httptools on uvloop by default).
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False, **uvicorn_options(settings.api)
    )


if __name__ == "__main__":
    main()
