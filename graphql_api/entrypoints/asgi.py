"""The production ASGI entry point: ``uvicorn graphql_api.entrypoints.asgi:app --workers N``.

Each worker process imports this module and builds its own app (its own DynamoDB client, pools
and loaders) from the settings it loads at import (graphql_api/settings/__init__.py). Nothing is shared
between workers but DynamoDB itself, so anything a request depends on (cursors, idempotency
records, persisted documents) must live there or be derived from shared settings such as the
signing secret.

Before it serves, each worker checks the table's data layout (datastore/upkeep/layout_version.py):
data in another layout than this release's stops it with one line naming the command to
run, unless SERVE_UNMIGRATED_DATA is on; so does a table it cannot read (DynamoDB
unreachable), where ``server.py run`` waits for DynamoDB instead. The check is awaited: at
import on a loop of its own when none runs (Lambda's init, a plain import), which it closes
with its connections; in the app's lifespan, before anything is served, when the importer's
loop runs already (a uvicorn worker imports the app inside its loop).

A worker dies with the process that started it (graphql_api/entrypoints/worker_process.py), so a server
killed outright leaves no worker holding its port.
"""

from __future__ import annotations

from graphql_api.entrypoints.heap import build_without_collecting, settle_heap

build_without_collecting()  # before the imports below: settle_heap, at the end, resumes collecting

import asyncio
import logging

from datastore.config import ConfigError
from datastore.errors import Unavailable
from datastore.table.store import Datastore
from datastore.tenancy.scope import LayoutScope
from datastore.upkeep import layout_version
from graphql_api.app import create_app
from graphql_api.entrypoints.worker_process import die_with_parent
from graphql_api.log_output import configure_logging
from graphql_api.observability.process import start_worker_process_metrics
from graphql_api.settings import Settings

die_with_parent()

_log = logging.getLogger("hr.startup")
settings = Settings.load()
if settings.datastore.embedded:
    # Workers never start an engine of their own: `server.py run` (WORKERS=N) starts one and
    # hands its endpoint down; in production DYNAMODB_ENDPOINT is `aws`.
    raise ConfigError("set DYNAMODB_ENDPOINT (a URL, or `aws` for AWS's regional endpoint)")

configure_logging(settings.api.log_format)
if settings.api.metrics_multiprocess_dir is not None:
    # One of `server.py run`'s workers: /metrics (in the parent) shows its CPU and memory by pid.
    start_worker_process_metrics()
datastore = Datastore.connect(settings.datastore)


async def check_layout() -> None:
    """Serve only data in this release's layout: else one line, and exit 2."""
    try:
        # Data in another layout than this release's would answer wrong without an error.
        layout = await layout_version.check_at_start(
            datastore.table(LayoutScope()), serve_anyway=settings.server.serve_unmigrated
        )
    except (layout_version.LayoutMismatch, Unavailable) as error:
        # One line through the configured logging (JSON in production), then exit without a
        # traceback. Unreadable is refused too: unchecked data may be data that answers wrong, and
        # the process manager (or Lambda's next init) starts the server again.
        mismatch = isinstance(error, layout_version.LayoutMismatch)
        reason = str(error) if mismatch else f"{error}: its data layout is unknown"
        _log.critical("not serving: %s", reason)
        await datastore.aclose()
        raise SystemExit(2) from None
    if layout.warning is not None:
        _log.warning("%s", layout.warning)


async def _check_layout_on_its_own_loop() -> None:
    try:
        await check_layout()
    finally:
        await datastore.aclose()  # the connections belong to this loop, which ends here


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


if _loop_running():
    app = create_app(datastore, settings.api, before_serving=check_layout)
else:
    asyncio.run(_check_layout_on_its_own_loop())
    app = create_app(datastore, settings.api)
settle_heap()
