"""Webhooks on AWS, in process: the three Lambda handlers, imported as Lambda imports them.

Real parts: DynamoDB Local (its stream's records, as Lambda's event source mapping delivers
them), SQS from moto's server (the queue the handlers send to, the messages they are given,
as Lambda's SQS event source delivers them), and loopback receivers verifying every POST with
``standardwebhooks``. DynamoDB is reached through a TCP proxy, so a test can make it
unreachable.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import boto3
import httpx
import orjson
import pytest

from datastore.aws.client import AsyncDynamo
from datastore.aws.control_plane import make_streams_client
from datastore.config import DatastoreSettings
from datastore.kinds.webhook_entities import DeliveryStatus, WebhookEndpoint
from datastore.table.pagination import PageRequest
from datastore.webhooks import endpoints, outbox
from tests.blocking import run
from tests.conftest import Tenant, new_tenant, table_on
from tests.graphql_api.subscriptions.test_gateway import Since
from tests.graphql_api.webhooks.receiver import Receiver
from tests.tcp_proxy import Mode, TcpProxy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ENTRY = "graphql_api.entrypoints.lambda_webhooks"
REGION = "eu-west-1"


@dataclass
class World:
    entry: ModuleType
    sqs: Any
    queue_url: str
    queue_arn: str
    proxy: TcpProxy
    since: Since

    def stream(self) -> dict[str, Any]:
        return dict(self.entry.stream_handler({"Records": self.since.records()}, None))

    def received(self, count: int, seconds: float = 15) -> list[dict[str, Any]]:
        """``count`` messages from the queue, as Lambda's SQS event source hands them on."""
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + seconds
        while len(found) < count:
            assert time.monotonic() < deadline, f"{len(found)} of {count} messages came"
            answer = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1, VisibilityTimeout=60
            )
            found += [sqs_record(message, self.queue_arn) for message in answer.get("Messages", [])]
        return found

    def consume(self, records: list[dict[str, Any]]) -> list[str]:
        """The consumer's answer to one batch: the message ids it asked to receive again."""
        answer = self.entry.queue_handler({"Records": records}, None)
        return [failure["itemIdentifier"] for failure in answer["batchItemFailures"]]


def sqs_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """A message in the envelope Lambda's SQS event source mapping delivers."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(int(time.time() * 1000))},
        "messageAttributes": {},
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


@pytest.fixture
def world(
    monkeypatch: pytest.MonkeyPatch,
    sts_endpoint: str,
    dynamodb_endpoint: str,
    streamed_table_name: str,
    settings: DatastoreSettings,
    client: DynamoDBClient,
) -> Iterator[World]:
    sqs = boto3.client(
        "sqs", endpoint_url=sts_endpoint, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    name = f"webhooks-{time.monotonic_ns()}"
    dead = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = orjson.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": 3}).decode()
    url = sqs.create_queue(QueueName=name, Attributes={"RedrivePolicy": redrive})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    port = httpx.URL(dynamodb_endpoint).port
    assert port is not None
    for key, value in {
        "DYNAMODB_ENDPOINT": "",  # set below, through the proxy
        "HR_TABLE_NAME": streamed_table_name,
        "HR_ENV": "development",  # loopback receivers
        "WEBHOOKS": "queue",
        "WEBHOOK_QUEUE_URL": url,
        "WEBHOOK_RETRY_SCHEDULE": "1,1,1",
        "WEBHOOK_QUEUE_LOST_AFTER_SECONDS": "0.001",
        "AWS_ENDPOINT_URL_SQS": sts_endpoint,
        "AWS_DEFAULT_REGION": REGION,
        # What Lambda gives the function (its role's); moto checks no signature.
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    with TcpProxy(port) as proxy:
        monkeypatch.setenv("DYNAMODB_ENDPOINT", proxy.endpoint_url)
        sys.modules.pop(ENTRY, None)
        entry = importlib.import_module(ENTRY)
        since = Since(make_streams_client(settings), client, streamed_table_name)
        try:
            yield World(entry, sqs, url, arn, proxy, since)
        finally:
            entry.close()
            sys.modules.pop(ENTRY, None)


@pytest.fixture
def two(dynamo: AsyncDynamo, streamed_table_name: str) -> tuple[Tenant, Tenant]:
    platform = table_on(dynamo, streamed_table_name)
    return new_tenant(platform, "Mine"), new_tenant(platform, "Theirs")


def subscribed(tenant: Tenant, receiver: Receiver) -> WebhookEndpoint:
    endpoint = run(endpoints.create_endpoint(tenant.table, url_text=receiver.url, types=["department.*"]))
    assert endpoint.secret is not None
    receiver.secrets.append(endpoint.secret)
    return endpoint


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    mine, theirs = Receiver().up(), Receiver().up()
    yield mine, theirs
    mine.down()
    theirs.down()


def test_stream_then_queue__each_organisation_s_events_to_its_own_receiver_verified(
    world: World, two: tuple[Tenant, Tenant], receivers: tuple[Receiver, Receiver]
) -> None:
    (a, b), (mine, theirs) = two, receivers
    subscribed(a, mine)
    theirs_endpoint = subscribed(b, theirs)
    made = [a.department("One"), b.department("Two"), a.department("Three")]

    assert world.stream()["sent"] == 3  # one message per due delivery, after the outbox was written
    assert world.consume(world.received(3)) == []

    assert sorted(r.body["data"]["objectId"] for r in mine.received) == sorted([made[0].dept_id, made[2].dept_id])
    assert [r.body["data"]["objectId"] for r in theirs.received] == [made[1].dept_id]
    assert all(r.verified for r in mine.received + theirs.received)
    assert {r.body["data"]["organizationId"] for r in mine.received} == {a.org_id}

    # A message naming another organisation's endpoint and event reaches nothing: the consumer
    # reads in the message's organisation's partition only.
    (their_delivery,) = run(outbox.list_deliveries(b.table, theirs_endpoint.endpoint_id, _first(10))).items
    forged = {"org": a.org_id, "endpoint": theirs_endpoint.endpoint_id, "event": their_delivery.event_id}
    world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=orjson.dumps(forged).decode())
    assert world.consume(world.received(1)) == []
    assert len(theirs.received) == 1 and len(mine.received) == 2


def test_queue__503_retried_by_the_schedule__same_event_id(
    world: World, two: tuple[Tenant, Tenant], receivers: tuple[Receiver, Receiver]
) -> None:
    (a, _), (mine, _) = two, receivers
    endpoint = subscribed(a, mine)
    mine.status = 503
    a.department("Flaky")
    assert world.stream()["sent"] == 1
    assert world.consume(world.received(1)) == []
    (first,) = run(outbox.list_deliveries(a.table, endpoint.endpoint_id, _first(10))).items
    assert (first.status, first.attempts, first.last_status_code) == (DeliveryStatus.PENDING, 1, 503)

    mine.status = 200
    retry = world.received(1)  # the consumer sent it, delayed by the schedule's 1 s
    assert world.consume(retry) == []
    (done,) = run(outbox.list_deliveries(a.table, endpoint.endpoint_id, _first(10))).items
    assert (done.status, done.attempts) == (DeliveryStatus.DELIVERED, 2)
    assert [r.webhook_id for r in mine.received] == [first.event_id, first.event_id]


def test_queue__dynamodb_unreachable__the_message_reported_for_another_receive(
    world: World, two: tuple[Tenant, Tenant], receivers: tuple[Receiver, Receiver], capsys: pytest.CaptureFixture[str]
) -> None:
    (a, _), (mine, _) = two, receivers
    subscribed(a, mine)
    a.department("Later")
    assert world.stream()["sent"] == 1
    batch = world.received(1)
    world.proxy.mode = Mode.DROP
    capsys.readouterr()
    assert world.consume(batch) == [batch[0]["messageId"]]
    assert mine.received == []
    # The EMF line the template's delivery-errors alarm reads (deploy/cloudformation.py).
    (emf,) = [orjson.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert (directive["Namespace"], directive["Dimensions"]) == ("HrApi", [[]])
    assert {"Name": "WebhookDeliveryErrors", "Unit": "Count"} in directive["Metrics"]
    assert emf["WebhookDeliveryErrors"] == 1
    world.proxy.mode = Mode.PASS
    assert world.consume(batch) == []  # as SQS hands it on again
    assert len(mine.received) == 1


def test_sweep__a_lost_message_sent_again_from_the_outbox(
    world: World, two: tuple[Tenant, Tenant], receivers: tuple[Receiver, Receiver]
) -> None:
    (a, _), (mine, _) = two, receivers
    endpoint = subscribed(a, mine)
    a.department("Missed")  # the stream's function never ran for it: its record is lost
    world.since.records()
    assert world.entry.sweep_handler({"source": "aws.events"}, None)["sent"] >= 1
    ours = [record for record in world.received(1) if orjson.loads(record["body"])["endpoint"] == endpoint.endpoint_id]
    assert world.consume(ours) == []
    assert len(mine.received) == 1 and mine.received[0].verified


def _first(count: int) -> PageRequest:
    return PageRequest(first=count)
