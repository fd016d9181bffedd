"""One API server for the bench: ``python -m bench.serve PORT [--naive] [--default-limits] [--workers N]``.

The product app (graphql_api.app.create_app) on DYNAMODB_ENDPOINT / HR_TABLE_NAME. The document
limits are raised so the bench's queries (100 aliases, 20 x 50 nesting, Q7's cost of ~11.8k)
are admitted, except with ``--default-limits`` (Q6: the most the defaults admit). With
``--workers N`` uvicorn runs N worker processes that each build the app from the environment
(graphql_api/asgi.py), as ``WORKERS=N server.py`` does.
The tenant rate limit is off unless the environment sets it (bench.fairness does).
"""

from __future__ import annotations

import argparse
import os

import uvicorn

from datastore.config import DatastoreSettings
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.config import ApiSettings

RAISED_LIMITS = {
    "MAX_ALIASES": "200",
    "MAX_QUERY_COST": "1000000",
    "MAX_TOKENS": "100000",
    "MAX_BODY_BYTES": "1000000",
    "MAX_DYNAMODB_CALLS": "100000",
    "MAX_QUERY_DEPTH": "20",
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
    if not args.default_limits:
        # Defaults only: a scenario that measures a limit (bench.fairness) sets its own.
        for name, value in RAISED_LIMITS.items():
            os.environ.setdefault(name, value)
    # The latency tables measure one tenant flat out: no tenant rate limit unless asked for.
    os.environ.setdefault("TENANT_COST_PER_SECOND", "0")
    if args.workers:
        uvicorn.run(
            "graphql_api.asgi:app",
            workers=args.workers,
            host="127.0.0.1",
            port=args.port,
            log_level="warning",
            access_log=False,
        )
        return
    datastore = Datastore.connect(DatastoreSettings.from_env())
    app = create_app(datastore, ApiSettings.from_env())
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
