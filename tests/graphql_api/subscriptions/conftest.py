"""A live server for the subscription suites: the production app with its change feed, on a table with a stream.

The session's own server and table have no stream (tests/conftest.py: a stream makes every
write dearer on DynamoDB Local); here ``table_name`` is the session's streamed table, so the
suites' tenants are made there, and ``http`` (hence ``api``) is this live server, so no test
here reaches the session's server. It reads the table's stream from the module's start, with
a short lease and poll so a takeover and a change arrive quickly. Its WebSocket clients speak
graphql-transport-ws (ws.py). A test module elsewhere imports these fixtures to the same end.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from datastore.config import DatastoreSettings, FeedSettings
from datastore.kinds.entities import Employee, Session
from datastore.signin import sessions
from datastore.table.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.live import serving, with_settings

FEED = FeedSettings(lease_seconds=3.0, poll_seconds=0.05)


def live_datastore(settings: DatastoreSettings, table_name: str) -> Datastore:
    """A server's Datastore of ``table_name`` on the session's DynamoDB, reading its change feed."""
    return Datastore(replace(settings, table_name=table_name), feed=FEED)


def live_settings(api_settings: ApiSettings, **changes: Any) -> ApiSettings:
    return with_settings(replace(api_settings), **changes)


@pytest.fixture(scope="session")
def table_name(streamed_table_name: str) -> str:
    return streamed_table_name


@pytest.fixture(scope="module")
def http(live_http: httpx.Client) -> httpx.Client:
    return live_http


@pytest.fixture(scope="module")
def live_app(table_name: str, settings: DatastoreSettings, api_settings: ApiSettings) -> Starlette:
    return create_app(live_datastore(settings, table_name), live_settings(api_settings))


@pytest.fixture(scope="module")
def live_http(live_app: Starlette, api_settings: ApiSettings) -> Iterator[httpx.Client]:
    with serving(live_app, ws_max_size=api_settings.max_body_bytes) as http:
        wait_until_live(live_app.state.live.feed.status)
        yield http


@contextmanager
def bounds(live_app: Starlette, **changes: Any) -> Iterator[None]:
    """The live server's settings changed for the block (the hub and the socket handler read
    them from the process's settings when they apply them)."""
    services = live_app.state.live.services
    before = services.settings
    services.settings = replace(before, **changes)
    try:
        yield
    finally:
        services.settings = before


def signed_in(
    api_settings: ApiSettings, tenant: Tenant, employee: Employee, *, ttl_seconds: int, idle_seconds: float = 3600
) -> tuple[str, Session]:
    """An access token of a real sign-in session of ``employee`` (its ``sid``), as POST /auth/token
    gives: the session's item written as sign-in writes it, the token expiring in ``ttl_seconds``."""
    lifetimes = sessions.Lifetimes(idle=timedelta(seconds=idle_seconds), absolute=timedelta(hours=12))
    session, _refresh_token = run(sessions.start_session(tenant.table, employee.emp_id, lifetimes))
    token = issue_token(
        api_settings,
        subject=employee.emp_id,
        org_id=tenant.org_id,
        role=employee.role.value,
        ttl_seconds=ttl_seconds,
        session_id=session.session_id,
    )
    return token, session


def subscribed(app: Starlette, org_id: str, count: int = 1, seconds: float = 10) -> None:
    """Wait until ``count`` subscriptions of ``org_id`` are registered with the app's hub: a
    subscription takes what is written from then on, so a test writes only after this."""
    deadline = time.monotonic() + seconds
    while len(app.state.live.streams.get(org_id, ())) < count:
        assert time.monotonic() < deadline, f"{count} subscriptions of {org_id} did not start"
        time.sleep(0.02)


def wait_until_live(status: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not (status.connected and status.generation):
        assert time.monotonic() < deadline, f"the live server's feed did not start: {status}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def live_url(live_http: httpx.Client) -> str:
    return str(live_http.base_url).rstrip("/")
