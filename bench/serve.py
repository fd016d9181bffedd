"""One API server process for the bench: ``python -m bench.serve PORT [--naive]``.

The product app (graphql_api.app.create_app) on DYNAMODB_ENDPOINT / HR_TABLE_NAME, with the
document limits raised so the bench's queries (100 aliases, 20 x 50 nesting) are admitted
and the tenant rate limit off, unless the environment sets them.
"""

from __future__ import annotations

import os
import sys

import uvicorn

from datastore.config import DatastoreSettings
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.config import ApiSettings


def main() -> None:
    port = int(sys.argv[1])
    if "--naive" in sys.argv:
        from bench.naive import install

        install()
    # Defaults only: a scenario that measures a limit (bench.fairness) sets its own.
    bench_limits = {
        "MAX_ALIASES": "200",
        "MAX_QUERY_COST": "1000000",
        "MAX_TOKENS": "100000",
        "MAX_BODY_BYTES": "1000000",
        "MAX_DYNAMODB_CALLS": "100000",
        "MAX_QUERY_DEPTH": "20",
        # The latency tables measure one tenant flat out: no tenant rate limit.
        "TENANT_COST_PER_SECOND": "0",
    }
    for name, value in bench_limits.items():
        os.environ.setdefault(name, value)
    settings = DatastoreSettings.from_env()
    datastore = Datastore.connect(settings)
    app = create_app(datastore, ApiSettings.from_env())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
