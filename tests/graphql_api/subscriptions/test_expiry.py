"""A live connection's credential running out (graphql_api/subscriptions/expiry.py).

A token from sign-in carries its session (``sid``): the connection outlives the token's
expiry while the session is signed in, and ends 4403 when the session does: signed out
(at once, from the session's stream record), signed out everywhere (the person's mark), or
expired (read again when it would expire). A token without a session ends at its expiry
(test_limits.py).
"""

from __future__ import annotations

import time

from starlette.applications import Starlette

from datastore.signin import sessions
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.subscriptions.conftest import signed_in, subscribed
from tests.graphql_api.subscriptions.ws import Socket, bearer, open_socket

DIRECTORY = "subscription Directory { employeeChanged { cursor } }"


def subscribed_socket(live_url: str, live_app: Starlette, tenant: Tenant, token: str) -> Socket:
    socket = open_socket(live_url)
    assert socket.init(bearer(token)) == {"type": "connection_ack"}
    socket.subscribe("1", DIRECTORY)
    subscribed(live_app, tenant.org_id)
    return socket


def test_token_expired__session_signed_in__the_connection_stays_and_delivers(
    live_url: str, live_app: Starlette, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token, _session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=2)
    socket = subscribed_socket(live_url, live_app, tenant, token)
    time.sleep(3.5)  # past the token's expiry (and the server's read of the session then)
    tenant.employee()
    assert socket.next_of("1", timeout=15)["type"] == "next"
    socket.close()


def test_session_ended__the_connection_closed_4403_at_once(
    live_url: str, live_app: Starlette, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token, session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=600)
    socket = subscribed_socket(live_url, live_app, tenant, token)
    assert run(sessions.end_session(tenant.table, tenant.admin.emp_id, session.session_id, sessions.SIGNED_OUT))
    started = time.monotonic()
    code, reason = socket.closed_with(timeout=15)
    assert (code, reason) == (4403, "the session ended: sign in again")
    print(f"closed {time.monotonic() - started:.2f} s after the sign-out")


def test_signed_out_everywhere__the_connection_closed_4403(
    live_url: str, live_app: Starlette, api_settings: ApiSettings, tenant: Tenant
) -> None:
    employee = tenant.employee()
    token, _session = signed_in(api_settings, tenant, employee, ttl_seconds=600)
    socket = subscribed_socket(live_url, live_app, tenant, token)
    run(sessions.sign_out_everywhere(tenant.table, employee.emp_id))
    code, reason = socket.closed_with(timeout=15)
    assert (code, reason) == (4403, "signed out everywhere: sign in again")


def test_session_expires_after_the_token__closed_4403_then(
    live_url: str, live_app: Starlette, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token, _session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=3, idle_seconds=6)
    socket = subscribed_socket(live_url, live_app, tenant, token)
    code, reason = socket.closed_with(timeout=15)
    assert (code, reason) == (4403, "the session ended: sign in again")
