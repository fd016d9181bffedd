"""The datastore as a running service: one table, Tables handed out per scope.

Every Table's calls go through the one client of the data plane (``datastore/aws/client.py``,
on the event loop); with role settings each Table's requests are signed with its scope's
credentials (``datastore/aws/credentials.py``). The boto3 clients of the control plane (creating
and describing the table, its TTL) and of the table's stream are made on first use, so a
process that needs neither does not import boto3; the role sessions' credentials are made
only with role settings.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from datastore.aws.client import AsyncDynamo, Mirror
from datastore.config import DatastoreSettings, FeedSettings
from datastore.table.retention import AuditRetention
from datastore.table.scoped import Table
from datastore.tenancy.scope import Scope

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from datastore.aws.credentials import RoleCredentials


@dataclass
class Datastore:
    # What the process was configured with, its endpoint the one it serves (DynamoDB Local's
    # when it started one).
    settings: DatastoreSettings
    # Per-scope credentials from STS; None: every request signed with the process's own.
    credentials: RoleCredentials | None = None
    # The change feed this process reads from the table's stream (datastore/feed/): a server's
    # (``connect``). None: it reads none, and serves no live update (a Datastore made for a
    # command, a bench, a test, or a table with no stream).
    feed: FeedSettings | None = None

    def __post_init__(self) -> None:
        # The data plane's client (datastore/aws/client.py), shared by every Datastore on these settings.
        self.aio = AsyncDynamo.of(Mirror.of(self.settings))

    @classmethod
    def connect(cls, settings: DatastoreSettings, endpoint_url: str | None = None) -> Datastore:
        if endpoint_url is not None:
            settings = replace(settings, endpoint_url=endpoint_url, embedded=False)
        feed = FeedSettings(lease_seconds=settings.feed_lease_seconds, poll_seconds=settings.feed_poll_seconds)
        if settings.roles is None:
            return cls(settings, feed=feed)
        # Imported here with botocore's credentials, which only role sessions need.
        from datastore.aws.control_plane import make_sts_client
        from datastore.aws.credentials import RoleCredentials

        return cls(settings, credentials=RoleCredentials(make_sts_client(settings), settings.roles), feed=feed)

    @property
    def table_name(self) -> str:
        return self.settings.table_name

    @property
    def audit_retention_days(self) -> int:
        """The platform's default audit retention, which every Table it hands out stamps with
        when the organisation sets none (datastore/table/retention.py)."""
        return self.settings.audit_retention_days

    @functools.cached_property
    def client(self) -> DynamoDBClient:
        """The control plane's boto3 client (DescribeTable, CreateTable, UpdateTable, TTL), made on first use."""
        from datastore.aws.control_plane import make_client

        return make_client(self.settings)

    @functools.cached_property
    def streams(self) -> Any:
        """The table's stream's boto3 client (the change feed, datastore/feed/), made on first use."""
        from datastore.aws.control_plane import make_streams_client

        return make_streams_client(self.settings)

    def table(self, scope: Scope, *, deadline: float | None = None) -> Table:
        """``scope``'s Table, signed with its credentials; none of its calls retried past
        ``deadline`` (``time.monotonic()``'s clock: a request's)."""
        return Table(
            self.aio,
            self.table_name,
            scope,
            credentials=self.credentials,
            deadline=deadline,
            retention=AuditRetention(self.audit_retention_days),
        )

    async def aclose(self) -> None:
        """Close the running event loop's connections to DynamoDB (the app's lifespan)."""
        await self.aio.aclose()

    def close(self) -> None:
        """Close the boto3 clients made (the event loop's connections close with ``aclose``)."""
        for made in ("client", "streams"):
            client = self.__dict__.get(made)
            if client is not None:
                client.close()
