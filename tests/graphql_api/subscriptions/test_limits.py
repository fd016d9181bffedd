"""The bounds of live connections: subscriptions per connection, connections per organisation
and per process, keep-alive pings, the connection's lifetime, and the token's expiry (a token
of a sign-in session: test_expiry.py).

Each test lowers one bound on the running live server for its own duration (the hub and the
socket handler read them from the process's settings when they apply them).
"""

from __future__ import annotations

import json

from starlette.applications import Starlette

from graphql_api.auth.tokens import issue_token
from graphql_api.settings.api import ApiSettings
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import bounds, subscribed
from tests.graphql_api.subscriptions.ws import Socket, bearer, open_socket

DIRECTORY = "subscription Directory { employeeChanged { cursor } }"


def connected(live_url: str, token: str) -> Socket:
    socket = open_socket(live_url)
    assert socket.init(bearer(token)) == {"type": "connection_ack"}
    return socket


def test_subscriptions_per_connection__the_one_past_the_bound_refused(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    with bounds(live_app, subscriptions_per_connection=1):
        socket = connected(live_url, api.token(tenant.admin))
        socket.subscribe("1", DIRECTORY)
        subscribed(live_app, tenant.org_id)
        socket.subscribe("2", DIRECTORY)
        refused = socket.next_of("2")
        assert refused["type"] == "error"
        assert [error["extensions"]["code"] for error in refused["payload"]] == ["TOO_MANY_SUBSCRIPTIONS"]
        socket.close()


def test_connections_per_organisation_and_per_process__1013_with_the_reason(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    # 1013 "try again later", which clients retry; 4429 is the protocol's for a second init.
    token = api.token(tenant.admin)
    with bounds(live_app, subscription_connections_per_tenant=1):
        first = connected(live_url, token)
        second = open_socket(live_url)
        second.send({"type": "connection_init", "payload": bearer(token)})
        code, reason = second.closed_with()
        assert code == 1013 and "your organisation" in reason
        first.close()
    hub = live_app.state.live
    with bounds(live_app, subscription_connections=hub.total):
        refused = open_socket(live_url)
        refused.send({"type": "connection_init", "payload": bearer(token)})
        code, reason = refused.closed_with()
        assert code == 1013 and "this server" in reason


def test_second_connection_init__still_4429(live_url: str, api: Api, tenant: Tenant) -> None:
    socket = connected(live_url, api.token(tenant.admin))
    socket.send({"type": "connection_init", "payload": bearer(api.token(tenant.admin))})
    assert socket.closed_with() == (4429, "Too many initialisation requests")


def test_ping_not_answered__4408(live_url: str, live_app: Starlette, api: Api, tenant: Tenant) -> None:
    with bounds(live_app, subscription_keepalive_seconds=0.2):
        socket = connected(live_url, api.token(tenant.admin))
        socket.answer_pings = False
        assert socket.receive() == {"type": "ping"}
        code, reason = socket.closed_with()
        assert code == 4408 and "no pong" in reason


def test_pings_answered__connection_stays(live_url: str, live_app: Starlette, api: Api, tenant: Tenant) -> None:
    # Half a second: a pong has until the next ping to arrive, which a loaded machine's client
    # did not always manage within 0.1 s (closed 4408, as it should be for a real laggard).
    with bounds(live_app, subscription_keepalive_seconds=0.5):
        socket = connected(live_url, api.token(tenant.admin))
        socket.subscribe("1", DIRECTORY)
        subscribed(live_app, tenant.org_id)
        while socket.pings < 3:  # three pings answered, each within the next period
            assert json.loads(socket.ws.recv(timeout=5)) == {"type": "ping"}
            socket.pings += 1
            socket.send({"type": "pong"})
        tenant.employee()
        assert socket.next_of("1")["type"] == "next"  # still open, still delivering
        socket.close()


def test_connection_lifetime__4408(live_url: str, live_app: Starlette, api: Api, tenant: Tenant) -> None:
    with bounds(live_app, subscription_lifetime_seconds=0.5):
        socket = connected(live_url, api.token(tenant.admin))
        code, reason = socket.closed_with()
        assert code == 4408 and "lifetime" in reason


def test_token_expiry__the_connection_ends_4403(live_url: str, api_settings: ApiSettings, tenant: Tenant) -> None:
    short = issue_token(api_settings, subject=tenant.admin.emp_id, org_id=tenant.org_id, role="admin", ttl_seconds=2)
    socket = connected(live_url, short)
    code, reason = socket.closed_with()
    assert code == 4403 and "expired" in reason
