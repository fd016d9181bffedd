"""Resuming with ``after``: the missed events replayed from the audit trail, then live, none twice.

And a subscriber that falls behind: its connection is closed SLOW (4413, "resume with your
last cursor") the moment its queue of undelivered events passes its bound, never dropped from
silently (graphql_api/subscriptions/connection.py, stream.py).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, cast

from starlette.applications import Starlette

from datastore.kinds.entities import AuditEvent, Role
from datastore.tenants import departments
from datastore.values.ids import EmployeeId, OrgId, new_id
from graphql_api.request.principal import Principal
from graphql_api.subscriptions.closing import Close, Closed
from graphql_api.subscriptions.connection import LiveConnection
from graphql_api.subscriptions.cursors import Position
from graphql_api.subscriptions.session import Round
from graphql_api.subscriptions.stream import LiveStream
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import subscribed
from tests.graphql_api.subscriptions.ws import AUDIT, Socket, admin_socket


def event_of(socket: Socket, operation_id: str) -> dict[str, str]:
    message = socket.next_of(operation_id)
    assert message["type"] == "next", message
    change: dict[str, Any] = message["payload"]["data"]["auditEventAdded"]
    return {"cursor": change["cursor"], "action": change["action"], "id": change["event"]["entityId"]}


def test_after__the_missed_events_replayed_then_live__none_missing_none_twice(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    socket = admin_socket(live_url, api, tenant)
    socket.subscribe("a", AUDIT)
    subscribed(live_app, tenant.org_id)
    first = run(departments.create_department(tenant.table, name="Before the break"))
    seen = event_of(socket, "a")
    assert seen["id"] == first.dept_id
    socket.close()  # the client goes away...

    missed = [run(departments.create_department(tenant.table, name=f"Missed {n}")) for n in range(3)]

    resumed = admin_socket(live_url, api, tenant)  # ...and comes back with its last cursor
    resumed.send({"id": "a", "type": "subscribe", "payload": {"query": AUDIT, "variables": {"after": seen["cursor"]}}})
    replayed = [event_of(resumed, "a") for _ in missed]
    assert [event["id"] for event in replayed] == [department.dept_id for department in missed]
    assert all(event["action"] == "department.create" for event in replayed)

    # At the seam: a write after the resume arrives live, once, and nothing comes before it.
    subscribed(live_app, tenant.org_id)
    live = run(departments.create_department(tenant.table, name="Live again"))
    after_seam = event_of(resumed, "a")
    assert after_seam["id"] == live.dept_id
    assert resumed.pending == []
    # Each cursor resumes exactly after its own event.
    assert len({seen["cursor"], *(event["cursor"] for event in replayed), after_seam["cursor"]}) == 5
    resumed.close()


def test_after__a_cursor_of_another_subscription__bad_user_input(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    socket = admin_socket(live_url, api, tenant)
    socket.subscribe("a", AUDIT)
    subscribed(live_app, tenant.org_id)
    run(departments.create_department(tenant.table, name="For a cursor"))
    cursor = event_of(socket, "a")["cursor"]
    directory = "subscription D($after: String) { employeeChanged(after: $after) { cursor } }"
    socket.send({"id": "d", "type": "subscribe", "payload": {"query": directory, "variables": {"after": cursor}}})
    message = socket.next_of("d")
    assert message["type"] == "error", message
    assert [error["extensions"]["code"] for error in message["payload"]] == ["BAD_USER_INPUT"]
    socket.close()


ORG = OrgId(new_id())


def _event(n: int) -> AuditEvent:
    return AuditEvent(
        org_id=ORG,
        event_id=new_id(),
        occurred_at=datetime.now(UTC),
        actor_id=None,
        action="department.create",
        entity_type="Department",
        entity_id=str(n),
        changes=(),
        before_version=None,
        after_version=1,
    )


class EveryEvent:
    name = "test"

    def matches(self, event: AuditEvent) -> bool:
        return True


def test_queue_past_its_bound__connection_closed_slow_never_dropped_silently() -> None:
    closes: list[Closed] = []

    async def scenario() -> LiveConnection:
        async def closer(why: Closed) -> None:
            closes.append(why)

        principal = Principal(EmployeeId(new_id()), ORG, Role.ADMIN)
        connection = LiveConnection(principal, 3, closer)
        round_ = cast(Round, None)  # never read: nothing is delivered here
        stream = LiveStream(connection, EveryEvent(), Position.starting_at(0, 0), 100, 60.0)
        for n in range(3):
            stream.offer(_event(n), round_)
        assert connection.closed is None and connection.queued == 3
        stream.offer(_event(3), round_)
        stream.offer(_event(4), round_)
        await asyncio.sleep(0)
        return connection

    connection = asyncio.run(scenario())
    assert connection.closed is not None and connection.closed.close is Close.SLOW
    assert [why.close.code for why in closes] == [4413]  # the transport was asked once
    assert "resume with your last cursor" in closes[0].detail
