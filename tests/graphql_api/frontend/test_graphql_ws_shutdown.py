"""``server.py run`` stopped with SIGTERM: graphql-ws sees the close the docs promise, and reconnects.

uvicorn closes every WebSocket itself at shutdown, before the app's lifespan ends; the
protocol we give it (graphql_api/entrypoints/websocket_protocol.py) closes them with 1001 and
the reason docs/api/subscriptions.md gives, which graphql-ws takes as "reconnect" (it tries
again at once, with its default retries).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from datastore.dev.local import free_port
from graphql_api.auth.tokens import issue_token
from graphql_api.settings.api import ApiSettings
from graphql_api.subscriptions.closing import Close
from tests import server_process
from tests.conftest import TenantFactory
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.frontend.graphql_ws_client import LiveClient, node_work

# The subscription suites' streamed table, where the tenant is made and the server serves.
from tests.graphql_api.subscriptions.conftest import table_name  # noqa: F401

DIRECTORY = "subscription Directory { employeeChanged { cursor } }"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return node_work(tmp_path_factory.mktemp("graphql-ws-shutdown"))


def test_sigterm__sockets_closed_1001_going_away__graphql_ws_reconnects(
    work: Path,
    dynamodb_endpoint: str,
    table_name: str,  # noqa: F811
    api_settings: ApiSettings,
    make_tenant: TenantFactory,
) -> None:
    env = {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": table_name,
        "HR_ENV": "test",
        "ALLOWED_HOSTS": "127.0.0.1",
        "JWT_SECRET": TEST_SECRET,
        "FEED_LEASE_SECONDS": "3",
        "FEED_POLL_SECONDS": "0.05",
        "METRICS_PORT": "",
    }
    tenant = make_tenant("Ws Shutdown")
    admin = tenant.admin
    token = issue_token(api_settings, subject=admin.emp_id, org_id=admin.org_id, role=admin.role.value)
    server = server_process.start(env, free_port())
    client = LiveClient(work, server.url, {"query": DIRECTORY}, 1, token=token)
    try:
        client.until("connected", seconds=30)
        client.until("frame", count=3, seconds=30)  # connection_init, connection_ack, subscribe
        assert server.stop(signal.SIGTERM) == 0
        [closed] = client.until("closed", seconds=30)[:1]
        assert (closed["closed"], closed["reason"]) == (Close.GOING_AWAY.code, Close.GOING_AWAY.reason)
        assert closed["reason"] == "Going away: the server is stopping, reconnect"
        # graphql-ws tries again by itself (the server is gone: that attempt fails, as it should).
        client.until("connecting", count=2, seconds=30)
    finally:
        client.close()
        server.stop(signal.SIGKILL)
