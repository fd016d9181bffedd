"""The production ASGI entry point: ``uvicorn graphql_api.asgi:app --workers N``.

Each worker process imports this module and builds its own app (its own boto3 client, pools
and loaders) from the settings it loads at import (graphql_api/settings.py). Nothing is shared
between workers but DynamoDB itself, so anything a request depends on (cursors, idempotency
records, persisted documents) must live there or be derived from shared settings such as the
signing secret.

A worker dies with the process that started it (graphql_api/worker_process.py), so a server
killed outright leaves no worker holding its port.
"""

from __future__ import annotations

from datastore.config import ConfigError
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.heap import settle_heap
from graphql_api.observability.logging import configure_logging
from graphql_api.settings import Settings
from graphql_api.worker_process import die_with_parent

die_with_parent()
settings = Settings.load()
if settings.datastore.embedded:
    # Workers never start an engine of their own: `server.py run` (WORKERS=N) starts one and
    # hands its endpoint down; in production DYNAMODB_ENDPOINT is `aws`.
    raise ConfigError("set DYNAMODB_ENDPOINT (a URL, or `aws` for AWS's regional endpoint)")

configure_logging(settings.api.log_format)
datastore = Datastore.connect(settings.datastore)
app = create_app(datastore, settings.api)
settle_heap()
