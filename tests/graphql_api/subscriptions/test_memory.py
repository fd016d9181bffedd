"""A long subscription holds no more than a short one: what an event's execution builds goes with it.

Counted in this process (the live server runs here): the collected-subfields objects graphql-core
builds for an event's execution (graphql_api/schema/event_executor.py). Before each event had a
memo of its own, every event of every subscription added some that lived as long as the
subscription: the worker's memory grew with each delivery, without end (bench/live_soak.py
shows the whole worker's resident set).
"""

from __future__ import annotations

import gc

from graphql.execution.collect_fields import CollectedFields
from starlette.applications import Starlette

from tests.conftest import TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import subscribed
from tests.graphql_api.subscriptions.ws import bearer, open_socket

AUDIT = "subscription Audit { auditEventAdded { cursor action event { entityType entityId } } }"
SUBSCRIBERS = 3
EVENTS = 15


def collected_fields() -> int:
    gc.collect()
    return sum(1 for each in gc.get_objects() if isinstance(each, CollectedFields))


def test_busy_subscriptions__what_each_event_built_is_released(
    live_url: str, live_app: Starlette, api: Api, make_tenant: TenantFactory
) -> None:
    tenant = make_tenant("Long Lived")
    sockets = [open_socket(live_url) for _ in range(SUBSCRIBERS)]
    try:
        for n, socket in enumerate(sockets):
            assert socket.init(bearer(api.token(tenant.admin))) == {"type": "connection_ack"}
            socket.subscribe(f"s{n}", AUDIT)
        subscribed(live_app, tenant.org_id, SUBSCRIBERS)

        def deliver(events: int) -> None:
            for n in range(events):
                tenant.department(f"Department {n}")
            for index, socket in enumerate(sockets):
                for _ in range(events):
                    message = socket.next_of(f"s{index}")
                    assert message["type"] == "next", message

        deliver(3)  # every path warmed up once
        before = collected_fields()
        deliver(EVENTS)
        grown = collected_fields() - before
    finally:
        for socket in sockets:
            socket.close()
    # One per delivery or more when leaking (SUBSCRIBERS x EVENTS = 45); none held after.
    assert grown < SUBSCRIBERS, f"{grown} collected-subfields objects held after {SUBSCRIBERS * EVENTS} deliveries"
