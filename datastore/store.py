"""The datastore as a running service: one client, one table, Tables handed out per scope.

With role settings, the client signs each Table's requests with its scope's credentials
(``datastore/credentials.py``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from datastore import calls, retention
from datastore.async_client import AsyncDynamo, ScopeKey
from datastore.async_table import AsyncTable
from datastore.client import make_client, make_streams_client, make_sts_client
from datastore.config import DatastoreSettings
from datastore.credentials import RoleCredentials
from datastore.feed.host import FeedSettings
from datastore.proxy import NO_PROXIES, Proxies
from datastore.retention import AuditRetention
from datastore.scope import Scope
from datastore.table import Table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass
class Datastore:
    client: DynamoDBClient
    table_name: str
    # Issues the chunks of one large BatchGetItem concurrently. Separate from the pool
    # that runs callers' blocking calls, so a caller waiting on its chunks cannot starve
    # them of threads.
    fanout: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(8, thread_name_prefix="dynamodb-fanout")
    )
    # Per-scope credentials from STS; None: every request signed with the client's own.
    credentials: RoleCredentials | None = None
    # The table's stream (the change feed, datastore/feed/); None where nothing reads it.
    streams: Any | None = None
    feed: FeedSettings = field(default_factory=FeedSettings)
    # The platform's default audit retention, which every Table it hands out stamps with
    # when the organisation sets none (datastore/retention.py).
    audit_retention_days: int = retention.DEFAULT_DAYS
    # The proxies the event loop's connections go through (DatastoreSettings.proxies).
    proxies: Proxies = NO_PROXIES

    def __post_init__(self) -> None:
        if self.credentials is not None:
            self.credentials.sign_per_scope(self.client)
        # The read path's client on the event loop, beside this boto3 client (datastore/async_client.py).
        self.aio = AsyncDynamo.beside(self.client, self.proxies)

    @classmethod
    def connect(cls, settings: DatastoreSettings, endpoint_url: str | None = None) -> Datastore:
        client = calls.instrument(make_client(settings, endpoint_url))
        # As many fan-out threads as connections: every chunk of a request's batches can
        # be in flight at once (the loaders no longer cut batches themselves).
        fanout = ThreadPoolExecutor(settings.pool_size, thread_name_prefix="dynamodb-fanout")
        streams = make_streams_client(settings, endpoint_url)
        feed = FeedSettings(lease_seconds=settings.feed_lease_seconds, poll_seconds=settings.feed_poll_seconds)
        days = settings.audit_retention_days
        credentials = None if settings.roles is None else RoleCredentials(make_sts_client(settings), settings.roles)
        return cls(
            client,
            settings.table_name,
            fanout,
            credentials=credentials,
            streams=streams,
            feed=feed,
            audit_retention_days=days,
            proxies=settings.proxies,
        )

    def table(self, scope: Scope) -> Table:
        return Table(
            self.client,
            self.table_name,
            scope,
            fanout=self.fanout,
            retention=AuditRetention(self.audit_retention_days),
        )

    def async_table(self, scope: Scope, *, deadline: float | None = None) -> AsyncTable:
        """``scope``'s reads on the running event loop, signed with its credentials; none retried
        past ``deadline`` (``time.monotonic()``'s clock: a request's)."""
        signing = None if self.credentials is None else ScopeKey(self.credentials.for_scope(scope))
        client = self.aio.client(signing, deadline=deadline)
        return AsyncTable(client, self.table_name, scope, observers=self.aio.observers, deadline=deadline)

    async def aclose(self) -> None:
        """Close the running event loop's connections to DynamoDB (the app's lifespan)."""
        await self.aio.aclose()

    def close(self) -> None:
        self.fanout.shutdown(wait=False)
