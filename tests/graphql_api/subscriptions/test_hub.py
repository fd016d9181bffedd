"""Whether a process reads the change feed: when its Datastore was given one, never by default.

A server's Datastore (``Datastore.connect``) reads its table's stream; one made without a feed
(the session's own server, a bench, a table with no stream) starts no reader, so it neither
takes the feed's lease nor logs a missing stream every 30 s, and says so to a socket.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import pytest

from datastore.aws.client import AsyncDynamo
from datastore.config import DatastoreSettings
from datastore.table.store import Datastore
from graphql_api.app import create_app
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant, provisioned
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving
from tests.graphql_api.subscriptions.ws import bearer, open_socket

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Long enough for a reader that was started to take its lease and find the table has no
# stream (it logs that within a second of the app's start on DynamoDB Local).
FEED_START_SECONDS = 3.0


def test_datastore_without_a_feed__no_reader__a_socket_closed_unavailable(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, api: Api, tenant: Tenant
) -> None:
    app = create_app(new_datastore(table_name), api_settings)  # a table with a stream, no feed asked
    with serving(app) as http:
        assert not app.state.live.available
        socket = open_socket(str(http.base_url).rstrip("/"))
        socket.send({"type": "connection_init", "payload": bearer(api.token(tenant.admin))})
        assert socket.closed_with() == (1013, "live updates are not served by this process")


@pytest.fixture(scope="module")
def unstreamed_table_name(client: DynamoDBClient, dynamo: AsyncDynamo, settings: DatastoreSettings) -> str:
    """A table with its stream off, as the session's own (this package's ``table_name`` is streamed)."""
    name = f"{settings.table_name}-unstreamed"
    provisioned(client, dynamo, name)
    client.update_table(TableName=name, StreamSpecification={"StreamEnabled": False})
    return name


def test_table_without_a_stream__no_feed_asked__nothing_logged_of_the_feed(
    new_datastore: DatastoreFactory,
    unstreamed_table_name: str,
    api_settings: ApiSettings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_app(new_datastore(unstreamed_table_name), api_settings)
    with caplog.at_level(logging.INFO), serving(app) as http:
        assert http.get("/healthz").status_code == 200
        time.sleep(FEED_START_SECONDS)
    assert [record.getMessage() for record in caplog.records if record.name == "hr.feed"] == []


def test_connect__a_servers_datastore__reads_the_feed_with_its_settings(settings: DatastoreSettings) -> None:
    datastore = Datastore.connect(settings)
    assert datastore.feed is not None
    assert (datastore.feed.lease_seconds, datastore.feed.poll_seconds) == (
        settings.feed_lease_seconds,
        settings.feed_poll_seconds,
    )
    assert Datastore(settings).feed is None
