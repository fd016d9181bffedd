"""The bench dataset on a fresh DynamoDB Local, for scripts that run the app in this process.

`python -m bench.counts` and `python -m bench.plans` drive the app through httpx's ASGI
transport (no sockets); both need the same table, dataset, API settings (the bench server's
raised limits, no tenant rate) and the admin's and profile employee's tokens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from bench.dataset import Dataset, seeded
from bench.serve import RAISED_LIMITS
from bench.serving import SECRET
from datastore.config import DatastoreSettings
from datastore.dev.local import DynamoDBLocal
from datastore.table.store import Datastore
from datastore.values import ids
from graphql_api.auth.tokens import issue_token
from graphql_api.settings import Settings
from graphql_api.settings.api import ApiSettings

T = TypeVar("T")


@dataclass(frozen=True)
class InProcess:
    settings: DatastoreSettings  # the fresh table's, on the local engine
    data: Dataset
    api: ApiSettings
    admin: str  # the admin's token (Q1, Q2, Q4, Q7)
    profile: str  # the profile employee's token (Q3)
    engine_pid: int | None  # DynamoDB Local's process (bench.warmup reads its threads)


@contextmanager
def in_process(*, cost_in_response: bool) -> Iterator[InProcess]:
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        table_name = f"hr-bench-{ids.new_id().lower()}"
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=table_name)
        data = seeded(settings)
        api = ApiSettings.from_env(
            {
                "HR_ENV": "bench",
                "ALLOWED_HOSTS": "bench",  # the in-process client's base URL
                "JWT_SECRET": SECRET,
                "COST_IN_RESPONSE": "true" if cost_in_response else "false",
                # The bench server's limits, so Q4's 100 aliases and Q7 run.
                **RAISED_LIMITS,
                "TENANT_COST_PER_SECOND": "0",
            }
        )
        admin = issue_token(api, subject=data.admin.emp_id, org_id=data.org_id, role="admin")
        profile = issue_token(api, subject=data.profile.emp_id, org_id=data.org_id, role="employee")
        yield InProcess(settings, data, api, admin, profile, local.pid)


def run(datastore: Datastore, work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, then close that loop's DynamoDB connections: the app's lifespan
    would, but the ASGI transport runs none, and each ``asyncio.run`` is a new loop."""

    async def closing() -> T:
        try:
            return await work
        finally:
            await datastore.aclose()

    return asyncio.run(closing())
