"""The process-wide parts every request shares, built once at start-up."""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, field

from datastore.table.store import Datastore
from graphql_api.limits.tenant_rate import Buckets
from graphql_api.request.blocking import BlockingRunner
from graphql_api.request.cursors import CursorCodec
from graphql_api.settings.api import ApiSettings


@dataclass
class Services:
    settings: ApiSettings
    datastore: Datastore
    # Runs blocking work that is no DynamoDB call: a JWKS fetch, an ID token's check (blocking.py).
    executor: Executor
    cursors: CursorCodec
    # Each organisation's share of work (limits/tenant_rate.py); None when the limit is off.
    tenant_buckets: Buckets | None = None
    # Runs it on that pool (blocking.py).
    run_blocking: BlockingRunner = field(init=False)

    def __post_init__(self) -> None:
        self.run_blocking = BlockingRunner(self.executor)
