"""Fixtures of the change feed's suite: a table of each test's own, with its stream, and stream faults.

Each test reads a stream no other test writes to (the session's table has one too, busy with
every suite), so what it reads is exactly what it wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pytest

from datastore.aws.control_plane import make_streams_client
from datastore.config import DatastoreSettings
from datastore.kinds.entities import Organization, Plan
from datastore.table.scoped import Table
from datastore.tenancy.scope import TenantScope
from datastore.tenants import organizations
from datastore.values import ids
from tests.blocking import run
from tests.conftest import provisioned, table_on, unique_domain
from tests.datastore.faults import _error
from tests.datastore.support import drop_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from datastore.aws.client import AsyncDynamo


@pytest.fixture(scope="session")
def streams(settings: DatastoreSettings) -> Any:
    return make_streams_client(settings)


@pytest.fixture
def own_table(client: DynamoDBClient, dynamo: AsyncDynamo) -> Iterator[Table]:
    """A fresh table with its stream, in the platform's scope."""
    name = f"hr-feed-{ids.new_id().lower()}"
    provisioned(client, dynamo, name)
    yield table_on(dynamo, name)
    drop_table(client, name)


def new_organization(platform: Table, name: str = "Feed Co") -> tuple[Organization, Table]:
    domain = unique_domain()
    org, admin = run(
        organizations.create_organization(
            platform,
            name=name,
            plan=Plan.PRO,
            email_domains=[domain],
            admin_email=f"admin@{domain}",
            admin_first_name="Ada",
            admin_last_name="Admin",
        )
    )
    return org, platform.with_scope(TenantScope(org.org_id, admin.emp_id))


@dataclass
class StreamFaults:
    """Answers the next calls of one streams operation with an error DynamoDB Local never sends."""

    planned: list[str] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)

    def __call__(self, **_: Any) -> Any:
        if not self.planned:
            return None
        code = self.planned.pop(0)
        self.injected.append(code)
        return _error(code, "injected by the test")


@contextmanager
def stream_faults(streams: Any, operation: str) -> Iterator[StreamFaults]:
    faults = StreamFaults()
    event, hook = f"before-call.dynamodbstreams.{operation}", f"hr-tests-stream-faults-{operation}"
    streams.meta.events.register(event, cast(Callable[..., None], faults), unique_id=hook)
    try:
        yield faults
    finally:
        streams.meta.events.unregister(event, unique_id=hook)
