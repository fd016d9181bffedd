"""One API server process for the bench: ``python -m bench.serve PORT [--naive]``.

The product app (graphql_api.app.create_app) on DYNAMODB_ENDPOINT / HR_TABLE_NAME, with the
document limits raised so the bench's queries (100 aliases, 20 x 50 nesting) are admitted.
"""

from __future__ import annotations

import sys

import uvicorn

from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.settings import Settings

# The bench's queries are larger than the product's defaults admit.
RAISED_LIMITS = {
    "MAX_ALIASES": "200",
    "MAX_QUERY_COST": "1000000",
    "MAX_TOKENS": "100000",
    "MAX_BODY_BYTES": "1000000",
    "MAX_DYNAMODB_CALLS": "100000",
    "MAX_QUERY_DEPTH": "20",
}


def main() -> None:
    port = int(sys.argv[1])
    if "--naive" in sys.argv:
        from bench.naive import install

        install()
    settings = Settings.load(RAISED_LIMITS)
    datastore = Datastore.connect(settings.datastore)
    app = create_app(datastore, settings.api)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
