"""Live updates watched: ``server.py run`` (two workers) with real WebSocket subscribers, read from its /metrics.

The figures are the parent's /metrics (the workers' files summed, subscriptions/live_metrics.py):
connections and subscriptions open, events delivered, the server's closes by code, the queue,
the stream reader's count and lag; a connection's end is one JSON log line with its tenant and
code. Before any request, the known series are there at zero (observability/metrics.py), and
under LOG_FORMAT=json every line the server writes is JSON, its start-up lines included.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from datastore.aws.client import AsyncDynamo
from datastore.dev.local import free_port
from datastore.kinds.entities import Employee
from datastore.table.scoped import Table
from datastore.tenancy.scope import TenantScope
from datastore.tenants import departments
from graphql_api.auth.tokens import issue_token
from graphql_api.settings.api import ApiSettings
from tests import server_process
from tests.blocking import run
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.subscriptions.ws import Socket, bearer, open_socket
from tests.test_live_workers import own_organisation

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

AUDIT = "subscription Audit { auditEventAdded { cursor action event { entityId } } }"
SUBSCRIBERS = 3
EVENTS = 4
Figures = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def figures(url: str) -> Figures:
    found: Figures = {}
    for family in text_string_to_metric_families(httpx.get(url, timeout=10).text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: Figures, name: str, **labels: str) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


def until(url: str, check: object, seconds: float = 30) -> Figures:
    deadline = time.monotonic() + seconds
    while True:
        found = figures(url)
        if check(found):  # type: ignore[operator]
            return found
        assert time.monotonic() < deadline, {k: v for k, v in found.items() if "hr_live" in k[0] or "hr_feed" in k[0]}
        time.sleep(0.3)


@pytest.fixture
def world(client: DynamoDBClient, dynamo: AsyncDynamo) -> Iterator[tuple[Table, Employee]]:
    with own_organisation(client, dynamo, "hr-watch", "Watch Co") as made:
        yield made.table, made.admin


def test_run__live_updates_watched_on_metrics_and_in_the_log(
    dynamodb_endpoint: str, world: tuple[Table, Employee], api_settings: ApiSettings, client: DynamoDBClient
) -> None:
    platform, admin = world
    metrics_port = free_port()
    env = {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": platform.name,
        "HR_ENV": "test",
        "ALLOWED_HOSTS": "127.0.0.1",
        "JWT_SECRET": TEST_SECRET,
        "WORKERS": "2",
        "FEED_LEASE_SECONDS": "5",
        "FEED_POLL_SECONDS": "0.05",
        "LOG_FORMAT": "json",
        "METRICS_PORT": str(metrics_port),
    }
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    token = issue_token(api_settings, subject=admin.emp_id, org_id=admin.org_id, role=admin.role.value)
    tenant = platform.with_scope(TenantScope(admin.org_id, admin.emp_id))
    sockets: list[Socket] = []
    with server_process.running(env, free_port()) as server:
        # Before any request: the series an alert reads, at zero.
        at_start = until(url, lambda f: value(f, "hr_feed_readers") == 1)
        answer = httpx.post(
            f"{server.url}/graphql", json={"query": "{ __typename }"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 200, answer.text
        try:
            for n in range(SUBSCRIBERS):
                socket = open_socket(server.url)
                sockets.append(socket)
                assert socket.init(bearer(token)) == {"type": "connection_ack"}
                socket.subscribe(f"s{n}", AUDIT)
            until(url, lambda f: value(f, "hr_live_subscriptions") == SUBSCRIBERS)
            # Every subscription is live once it has an event.
            while True:
                run(departments.create_department(tenant, name="Warm-up"))
                try:
                    for n, socket in enumerate(sockets):
                        assert socket.next_of(f"s{n}", timeout=2)["type"] == "next"
                    break
                except TimeoutError:
                    continue
            time.sleep(1)
            delivered = value(figures(url), "hr_live_events_delivered_total") or 0.0
            for n in range(EVENTS):
                run(departments.create_department(tenant, name=f"Watched {n}"))
            for n, socket in enumerate(sockets):
                for _ in range(EVENTS):
                    assert socket.next_of(f"s{n}")["type"] == "next"
            busy = until(
                url,
                lambda f: (
                    (value(f, "hr_live_events_delivered_total") or 0) >= delivered + SUBSCRIBERS * EVENTS
                    and (value(f, "hr_feed_records_read_total") or 0) >= EVENTS
                ),  # sampled every 2 s
            )
            # The organisation suspended: the server closes every connection FORBIDDEN (4403).
            client.update_item(
                TableName=platform.name,
                Key={"PK": {"S": f"ORG#{admin.org_id}"}, "SK": {"S": "#METADATA"}},
                UpdateExpression="SET #s = :s",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": {"S": "suspended"}},
            )
            codes = [socket.closed_with()[0] for socket in sockets]
            ended = until(url, lambda f: value(f, "hr_live_connections") == 0)
        finally:
            for socket in sockets:
                socket.close()
        output = server.output()

    assert value(at_start, "hr_live_closes_total", code="4413") == 0
    assert value(at_start, "hr_live_closes_total", code="4403") == 0
    assert value(at_start, "hr_requests_with_error_total", code="UNAVAILABLE") == 0
    assert value(at_start, "hr_requests_total", route="/graphql", operation="none", status="503") == 0
    assert value(at_start, "hr_live_connections") == 0
    assert value(at_start, "hr_feed_lag_seconds") is not None

    assert value(at_start, "hr_requests_total", route="/graphql", operation="anonymous", status="200") == 0
    assert value(busy, "hr_requests_total", route="/graphql", operation="anonymous", status="200") == 1
    assert value(busy, "hr_live_connections") == SUBSCRIBERS
    assert value(busy, "hr_live_subscriptions") == SUBSCRIBERS
    assert value(busy, "hr_live_queued_events") is not None
    assert value(busy, "hr_live_events_delivered_total") == delivered + SUBSCRIBERS * EVENTS
    assert (value(busy, "hr_feed_records_read_total") or 0) >= EVENTS
    assert value(busy, "hr_feed_readers") == 1  # one of the two workers reads

    assert codes == [4403] * SUBSCRIBERS
    assert value(ended, "hr_live_closes_total", code="4403") == SUBSCRIBERS
    assert value(ended, "hr_live_closes_total", code="4413") == 0
    assert value(ended, "hr_live_subscriptions") == 0

    lines = output.splitlines()
    not_json = [line for line in lines if not line.startswith("{")]
    assert not_json == []  # the start-up lines too
    records = [orjson.loads(line) for line in lines]
    assert any(record["message"].startswith("GraphQL on http://") for record in records)
    ends = [record for record in records if record["message"].startswith("live connection ended")]
    assert [(end["tenant"], end["code"], end["transport"]) for end in ends] == [
        (admin.org_id, 4403, "websocket")
    ] * SUBSCRIBERS
