"""A sign-in session's subscription re-sent without ``after`` (graphql_api/subscriptions/resumes.py).

Sent again on a new connection of the same session, it resumes where the session got to;
not on the same connection, not after the client completed it, not with an API key, and a
resume refused for too many events since is forgotten (the next subscription starts from now).
The point a connection's end saves in the table is deleted when the client completes it.
The whole story with graphql-ws's own client: tests/graphql_api/frontend/test_graphql_ws.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.applications import Starlette

from datastore.kinds.entities import Session
from datastore.signin import resume_points
from datastore.tenants import departments
from datastore.values import items
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.subscriptions.conftest import bounds, signed_in, subscribed
from tests.graphql_api.subscriptions.ws import AUDIT, Socket, bearer, open_socket


def connected(live_url: str, token: str) -> Socket:
    socket = open_socket(live_url)
    assert socket.init(bearer(token)) == {"type": "connection_ack"}
    return socket


def closed(live_app: Starlette, socket: Socket, org_id: str) -> None:
    """Close ``socket`` and wait until the server has let its subscriptions go: what is written
    after that was sent to no one (written sooner, it may go to the closing socket)."""
    socket.close()
    deadline = time.monotonic() + 10
    while live_app.state.live.streams.get(org_id):
        assert time.monotonic() < deadline, "the closed connection's subscriptions stayed"
        time.sleep(0.02)


def entity_of(socket: Socket, operation_id: str) -> str:
    message = socket.next_of(operation_id)
    assert message["type"] == "next", message
    entity: str = message["payload"]["data"]["auditEventAdded"]["event"]["entityId"]
    return entity


def test_new_connection_of_the_session__resumes__the_same_connection_does_not(
    live_url: str, live_app: Starlette, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token, _session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=600)
    first = connected(live_url, token)
    first.subscribe("1", AUDIT)
    subscribed(live_app, tenant.org_id)
    seen = run(departments.create_department(tenant.table, name="Seen")).dept_id
    assert entity_of(first, "1") == seen
    closed(live_app, first, tenant.org_id)
    missed = [run(departments.create_department(tenant.table, name=f"Missed {n}")).dept_id for n in range(3)]

    second = connected(live_url, token)
    second.subscribe("1", AUDIT)
    assert [entity_of(second, "1") for _ in missed] == missed
    # On the same connection, a second subscription to the same starts from now.
    second.subscribe("2", AUDIT)
    subscribed(live_app, tenant.org_id, count=2)
    later = run(departments.create_department(tenant.table, name="Later")).dept_id
    assert entity_of(second, "2") == later
    assert entity_of(second, "1") == later
    second.close()


def test_completed_by_the_client__the_next_starts_from_now(
    live_url: str, live_app: Starlette, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token, _session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=600)
    first = connected(live_url, token)
    first.subscribe("1", AUDIT)
    subscribed(live_app, tenant.org_id)
    run(departments.create_department(tenant.table, name="Seen"))
    entity_of(first, "1")
    first.send({"id": "1", "type": "complete"})
    closed(live_app, first, tenant.org_id)
    run(departments.create_department(tenant.table, name="Not asked for"))

    second = connected(live_url, token)
    second.subscribe("1", AUDIT)
    subscribed(live_app, tenant.org_id)
    fresh = run(departments.create_department(tenant.table, name="Fresh")).dept_id
    assert entity_of(second, "1") == fresh
    second.close()


def saved_point(tenant: Tenant, session: Session) -> bool:
    """Whether the table holds where the session's audit subscription got to (datastore/signin/resume_points.py)."""
    name = resume_points.subscription_hash("Subscription.auditEventAdded")
    return run(resume_points.find(tenant.table, tenant.admin.emp_id, session.session_id, name, items.now())) is not None


def within(seconds: float, condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_connection_closed__its_point_saved__completed_on_the_next__deleted(
    live_url: str, live_app: Starlette, api_settings: ApiSettings, tenant: Tenant
) -> None:
    """What another process would resume from: saved when a connection ends, gone once the
    client completes the subscription (tests/graphql_api/subscriptions/test_resumes_across_processes.py)."""
    token, session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=600)
    first = connected(live_url, token)
    first.subscribe("1", AUDIT)
    subscribed(live_app, tenant.org_id)
    run(departments.create_department(tenant.table, name="Seen"))
    entity_of(first, "1")
    closed(live_app, first, tenant.org_id)
    assert within(10, lambda: saved_point(tenant, session))

    second = connected(live_url, token)
    second.subscribe("1", AUDIT)
    subscribed(live_app, tenant.org_id)
    second.send({"id": "1", "type": "complete"})
    assert within(10, lambda: not saved_point(tenant, session))
    second.close()


def test_too_many_events_since__refused_once__then_from_now(
    live_url: str, live_app: Starlette, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token, _session = signed_in(api_settings, tenant, tenant.admin, ttl_seconds=600)
    first = connected(live_url, token)
    first.subscribe("1", AUDIT)
    subscribed(live_app, tenant.org_id)
    run(departments.create_department(tenant.table, name="Seen"))
    entity_of(first, "1")
    closed(live_app, first, tenant.org_id)
    for n in range(4):
        run(departments.create_department(tenant.table, name=f"Missed {n}"))
    with bounds(live_app, subscription_replay_events=2):
        second = connected(live_url, token)
        second.subscribe("1", AUDIT)
        refused = second.next_of("1")
        assert refused["type"] == "error", refused
        assert [error["extensions"]["code"] for error in refused["payload"]] == ["BAD_USER_INPUT"]
        second.subscribe("2", AUDIT)
        subscribed(live_app, tenant.org_id)
        fresh = run(departments.create_department(tenant.table, name="Fresh")).dept_id
        assert entity_of(second, "2") == fresh
        second.close()
