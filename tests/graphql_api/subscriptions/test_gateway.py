"""Live updates on AWS: the WebSocket API's handler and the stream's fan-out, in process.

The handlers get events in the shapes API Gateway (WebSocket, ``$connect``/``$default``/
``$disconnect``) and Lambda's DynamoDB Streams source send: the stream's events carry the
records DynamoDB Local's stream of the table got for the test's writes, read with the
``dynamodbstreams`` API from just before them, in Lambda's envelope; they post to
moto's server, which implements API Gateway's management API, and whose backend (in this
process) shows what each connection was sent. A connection that is gone is one on a local
endpoint that answers every call 410 GoneException, as API Gateway does.
"""

from __future__ import annotations

import asyncio
import http.server
import itertools
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from datastore.aws import calls
from datastore.aws.control_plane import make_streams_client
from datastore.config import DatastoreSettings
from datastore.dev.local_sts import serving_sts
from datastore.feed.reader import StreamReader
from datastore.feed.records import StreamRecord
from datastore.kinds import layout
from datastore.kinds.entities import ApplicationStatus, Department, Employee, Role, Session
from datastore.signin import api_keys, resume_points, sessions
from datastore.tenancy import keys
from datastore.tenancy.scope import GatewayScope
from datastore.tenants import applications, departments, employees, jobs, live_connections
from datastore.values import ids
from datastore.values.items import now
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.execution import ids as global_ids
from graphql_api.settings.api import ApiSettings
from graphql_api.subscriptions.gateway import Boto3ManagementApi, LiveGateway
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant, TenantFactory
from tests.graphql_api.subscriptions.conftest import signed_in

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DOMAIN = "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
GONE_DOMAIN = "gone0000aa.execute-api.eu-west-1.amazonaws.com"
STAGE = "live"
APPLICATIONS = """subscription Reviews($job: ID!) {
  applicationChanged(jobPostingId: $job) { cursor action application { status } }
}"""
AUDIT = "subscription Audit { auditEventAdded { action event { entityType } } }"
DIRECTORY = "subscription Directory { employeeChanged { action employee { id } } }"
_ids = itertools.count(1)


# --- moto's management API, and an endpoint whose connections are gone ----------------------------


class _Gone(http.server.BaseHTTPRequestHandler):
    def _gone(self) -> None:
        body = b'{"message": "Gone"}'
        self.send_response(410)
        self.send_header("x-amzn-ErrorType", "GoneException")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_DELETE = do_GET = _gone

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    with serving_sts() as url:  # moto's whole server: the management API too
        yield url


@pytest.fixture(scope="module")
def gone_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Gone)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def sent_to(connection_id: str) -> list[dict[str, Any]]:
    """What moto's management API holds for a connection: every message posted, in order."""
    from moto.apigatewaymanagementapi.models import apigatewaymanagementapi_backends

    found: list[dict[str, Any]] = []
    for regions in apigatewaymanagementapi_backends.values():
        for backend in regions.values():
            for name, connection in backend.connections.items():
                if urllib.parse.unquote(name) == connection_id:
                    found += _messages(connection.data)
    return found


def _messages(data: bytes) -> list[dict[str, Any]]:
    """Messages posted one after another (moto keeps their bytes end to end)."""
    decoder, text, at = json.JSONDecoder(), data.decode(), 0
    found: list[dict[str, Any]] = []
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


class Recorded(Boto3ManagementApi):
    """The management API through boto3 (to moto, or to the gone endpoint), noting what it sends:
    moto forgets a deleted connection's messages, and the gone endpoint keeps none."""

    def __init__(self, endpoint_of: dict[str, str]) -> None:
        # Any credentials: moto's server and the gone endpoint check no signature.
        super().__init__(endpoint_of, aws_access_key_id="testing", aws_secret_access_key="testing")
        self.posted: dict[str, list[dict[str, Any]]] = {}
        self.deleted: list[str] = []

    def post(self, endpoint: str, connection_id: str, data: bytes) -> bool:
        self.posted.setdefault(connection_id, []).append(orjson.loads(data))
        return super().post(endpoint, connection_id, data)

    def delete(self, endpoint: str, connection_id: str) -> None:
        self.deleted.append(connection_id)
        super().delete(endpoint, connection_id)


# --- the functions' app, and events as API Gateway and Lambda send them ---------------------------


@dataclass
class Aws:
    live: LiveGateway
    management: Recorded
    loop: asyncio.AbstractEventLoop
    settings: ApiSettings
    streams: Any
    client: DynamoDBClient
    table_name: str

    def socket(self, route: str, connection_id: str, body: object = None, **options: Any) -> dict[str, Any]:
        return self.loop.run_until_complete(self.live.connection(socket_event(route, connection_id, body, **options)))

    def stream(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return self.loop.run_until_complete(self.live.stream({"Records": records}))

    def since(self) -> Since:
        """The table's stream from now on: what a write made it get, for ``stream``."""
        return Since(self.streams, self.client, self.table_name)

    def token(self, who: Employee) -> str:
        return issue_token(self.settings, subject=who.emp_id, org_id=who.org_id, role=who.role.value)

    def connect(self, who: Employee, *, domain: str = DOMAIN) -> str:
        """A browser's connection: opened without a header, authenticated by connection_init."""
        connection_id = f"c{next(_ids)}{ids.new_id()[-8:]}"
        assert self.socket("$connect", connection_id, domain=domain)["statusCode"] == 200
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {self.token(who)}"}}
        self.socket("$default", connection_id, init, domain=domain)
        assert self.management.posted[connection_id][-1] == {"type": "connection_ack"}
        return connection_id

    def subscribe(
        self, connection_id: str, operation_id: str, query: str, *, domain: str = DOMAIN, **variables: Any
    ) -> None:
        message = {"id": operation_id, "type": "subscribe", "payload": {"query": query, "variables": variables}}
        self.socket("$default", connection_id, message, domain=domain)


@pytest.fixture(scope="module")
def aws(
    client: DynamoDBClient,
    new_datastore: DatastoreFactory,
    table_name: str,
    settings: DatastoreSettings,
    api_settings: ApiSettings,
    moto_url: str,
    gone_url: str,
) -> Iterator[Aws]:
    app = create_app(new_datastore(table_name), api_settings)
    parts = app.state.live_parts
    management = Recorded({f"https://{DOMAIN}/{STAGE}": moto_url, f"https://{GONE_DOMAIN}/{STAGE}": gone_url})
    loop = asyncio.new_event_loop()
    yield Aws(
        LiveGateway(parts.schema, parts.services, parts.backend, parts.persisted, management),
        management,
        loop,
        api_settings,
        make_streams_client(settings),
        client,
        table_name,
    )
    loop.run_until_complete(parts.services.datastore.aclose())
    loop.close()
    parts.services.executor.shutdown(wait=False)


def socket_event(
    route: str, connection_id: str, body: object = None, *, headers: dict[str, str] | None = None, domain: str = DOMAIN
) -> dict[str, Any]:
    """An API Gateway WebSocket proxy event (Lambda integration) for ``route``."""
    kind = {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}.get(route, "MESSAGE")
    context: dict[str, Any] = {
        "routeKey": route,
        "eventType": kind,
        "extendedRequestId": f"x{next(_ids)}",
        "requestTime": "26/Nov/2026:04:00:00 +0000",
        "messageDirection": "IN",
        "stage": STAGE,
        "connectedAt": 1795665600000,
        "requestTimeEpoch": 1795665600000,
        "identity": {"sourceIp": "203.0.113.9", "userAgent": "test"},
        "requestId": f"r{next(_ids)}",
        "domainName": domain,
        "connectionId": connection_id,
        "apiId": domain.split(".")[0],
    }
    event: dict[str, Any] = {"requestContext": context, "isBase64Encoded": False}
    if route == "$connect":
        sent = {"Host": domain, "Sec-WebSocket-Protocol": "graphql-transport-ws", "Sec-WebSocket-Version": "13"}
        sent.update(headers or {})
        event["headers"] = sent
        event["multiValueHeaders"] = {name: [value] for name, value in sent.items()}
    elif route == "$disconnect":
        context.update(disconnectStatusCode=1001, disconnectReason="Going away")
        event["headers"] = {"Host": domain}
    else:
        context["messageId"] = f"m{next(_ids)}"
        event["body"] = body if isinstance(body, str) else orjson.dumps(body).decode()
    return event


class _Keeping:
    """The streams client, keeping each record GetRecords returns as it returned it."""

    def __init__(self, streams: Any, kept: dict[str, dict[str, Any]]) -> None:
        self._streams, self._kept = streams, kept

    def __getattr__(self, name: str) -> Any:
        return getattr(self._streams, name)

    def get_records(self, **params: Any) -> Any:
        response = self._streams.get_records(**params)
        for record in response.get("Records", []):
            self._kept[record["dynamodb"]["SequenceNumber"]] = record
        return response


class Since:
    """The records the table's stream got from now on, as Lambda's DynamoDB Streams source delivers them.

    The change feed's own reader (datastore/feed/reader.py) finds the stream's shards, takes an
    iterator at LATEST on each open one now (DynamoDB Local's quirks and shards that appear later
    handled as for the server) and reads them in lineage order; the client it reads through keeps
    each record as DynamoDB Local's GetRecords returned it."""

    def __init__(self, streams: Any, client: DynamoDBClient, table_name: str) -> None:
        self._kept: dict[str, dict[str, Any]] = {}  # by sequence number: unique in a stream
        self._reader = StreamReader(_Keeping(streams, self._kept), client, table_name, describe_every=0.0)
        run(self._reader.start())

    def records(self) -> list[dict[str, Any]]:
        found: list[StreamRecord] = []
        while batch := run(self._reader.poll()):
            found += batch
        assert self._reader.take_gaps() == []
        arn = self._reader.stream_arn
        assert arn is not None
        return [lambda_record(self._kept[record.sequence_number], arn) for record in found]


def lambda_record(got: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A record as GetRecords returned it, in the envelope Lambda's event source mapping delivers:
    the same fields, the stream's ARN added, the creation time in epoch seconds (JSON)."""
    body = dict(got["dynamodb"])
    at = body["ApproximateCreationDateTime"]
    seconds = at.timestamp() if isinstance(at, datetime) else float(at)
    body["ApproximateCreationDateTime"] = int(seconds) if seconds.is_integer() else seconds
    return {
        "eventID": got["eventID"],
        "eventName": got["eventName"],
        "eventVersion": got["eventVersion"],
        "eventSource": got["eventSource"],
        "awsRegion": got["awsRegion"],
        "dynamodb": body,
        "eventSourceARN": stream_arn,
    }


def of_kind(batch: list[dict[str, Any]], name: str, kind: str) -> list[dict[str, Any]]:
    """The records of ``batch`` of one change (INSERT, MODIFY, REMOVE) to one kind of item."""
    return [
        record
        for record in batch
        if record["eventName"] == name
        and (record["dynamodb"].get("NewImage") or record["dynamodb"]["OldImage"])["entity"]["S"] == kind
    ]


@dataclass
class Org:
    tenant: Tenant
    sales: Department
    manager: Employee
    employee: Employee


@pytest.fixture
def org(make_tenant: TenantFactory) -> Org:
    tenant = make_tenant("Gateway Org")
    manager = tenant.employee(role=Role.MANAGER)
    sales = run(departments.create_department(tenant.table, name="Sales", manager_id=manager.emp_id))
    return Org(tenant, sales, manager, tenant.employee(sales))


def live_items(org: Tenant) -> live_connections.LiveItems:
    return run(live_connections.live_items(org.table))


# --- the protocol ---------------------------------------------------------------------------------


def test_connect__a_browser_without_credential_opens__connection_init_without_one_is_refused_4401(aws: Aws) -> None:
    answer = aws.socket("$connect", "anon1")
    assert answer["statusCode"] == 200
    assert answer["headers"] == {"Sec-WebSocket-Protocol": "graphql-transport-ws"}

    aws.socket("$default", "anon1", {"type": "connection_init", "payload": {}})

    closing = aws.management.posted["anon1"]
    assert [message["type"] for message in closing] == ["ping"]
    assert closing[0]["payload"]["close"]["code"] == 4401
    assert "anon1" in aws.management.deleted


def test_connection_init_with_a_bad_token__refused_4403_nothing_recorded(aws: Aws, tenant: Tenant) -> None:
    aws.socket("$connect", "bad1")
    aws.socket("$default", "bad1", {"type": "connection_init", "payload": {"Authorization": "Bearer not.a.jwt"}})

    assert aws.management.posted["bad1"][0]["payload"]["close"]["code"] == 4403
    assert "bad1" in aws.management.deleted
    assert run(live_connections.org_of(aws.live.services.datastore.table(GatewayScope()), "bad1")) is None


def test_connect_with_a_refused_header__handshake_refused_403(aws: Aws) -> None:
    answer = aws.socket("$connect", "hdr1", headers={"Authorization": "Bearer not.a.jwt"})
    assert answer["statusCode"] == 403


def test_connect_with_a_header__acknowledged_on_connection_init(aws: Aws, org: Org) -> None:
    header = {"Authorization": f"Bearer {aws.token(org.manager)}"}
    assert aws.socket("$connect", "hdr2", headers=header)["statusCode"] == 200
    aws.socket("$default", "hdr2", {"type": "connection_init"})
    aws.socket("$default", "hdr2", {"type": "ping"})
    assert aws.management.posted["hdr2"] == [{"type": "connection_ack"}, {"type": "pong"}]
    # The protocol: one connection_init only.
    aws.socket("$default", "hdr2", {"type": "connection_init"})
    assert aws.management.posted["hdr2"][-1]["payload"]["close"]["code"] == 4429


def test_message_over_an_http_body_s_bound__1009_before_it_is_read(aws: Aws, org: Org) -> None:
    header = {"Authorization": f"Bearer {aws.token(org.manager)}"}
    assert aws.socket("$connect", "big1", headers=header)["statusCode"] == 200
    aws.socket("$default", "big1", {"type": "connection_init"})
    query = AUDIT + "\n#" + "x" * aws.settings.max_body_bytes
    aws.socket("$default", "big1", {"id": "1", "type": "subscribe", "payload": {"query": query}})
    close = aws.management.posted["big1"][-1]["payload"]["close"]
    assert close["code"] == 1009 and str(aws.settings.max_body_bytes) in close["reason"]
    assert "big1" in aws.management.deleted


def test_subscribe_before_connection_ack__4401(aws: Aws) -> None:
    aws.socket("$connect", "early1")
    aws.socket("$default", "early1", {"id": "1", "type": "subscribe", "payload": {"query": AUDIT}})
    assert aws.management.posted["early1"][0]["payload"]["close"]["code"] == 4401


def test_subscribe__recorded_in_the_tenant_s_partition__complete_and_disconnect_delete(aws: Aws, org: Org) -> None:
    job = run(
        jobs.publish_job(
            org.tenant.table,
            run(jobs.create_job(org.tenant.table, department_id=org.sales.dept_id, title="Rep")).job_id,
        )
    )
    connection_id = aws.connect(org.manager)
    aws.subscribe(connection_id, "a", APPLICATIONS, job=global_ids.encode("JobPosting", job.job_id))
    aws.subscribe(connection_id, "b", DIRECTORY)

    items = live_items(org.tenant)
    assert list(items.connections) == [connection_id]
    assert {(s.operation_id, s.field) for s in items.subscriptions} == {
        ("a", "applicationChanged"),
        ("b", "employeeChanged"),
    }
    assert aws.management.posted[connection_id] == [{"type": "connection_ack"}]  # no error

    aws.socket("$default", connection_id, {"id": "a", "type": "complete"})
    assert [s.operation_id for s in live_items(org.tenant).subscriptions] == ["b"]

    aws.socket("$disconnect", connection_id)
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])
    assert run(live_connections.org_of(aws.live.services.datastore.table(GatewayScope()), connection_id)) is None


def test_subscribe_refused_by_the_rules_of_queries__error_and_nothing_recorded(aws: Aws, org: Org) -> None:
    connection_id = aws.connect(org.employee)
    aws.subscribe(connection_id, "x", AUDIT)  # admins only

    error = aws.management.posted[connection_id][-1]
    assert error["type"] == "error" and error["id"] == "x"
    assert [e["extensions"]["code"] for e in error["payload"]] == ["FORBIDDEN"]
    assert live_items(org.tenant).subscriptions == []


# --- the fan-out --------------------------------------------------------------------------------


def test_fan_out__org_a_s_reviewer_gets_the_status_change__org_b_is_not_even_read(
    aws: Aws, org: Org, make_tenant: TenantFactory
) -> None:
    other = make_tenant("Other Org")
    watcher = aws.connect(other.admin)
    aws.subscribe(watcher, "all", AUDIT)
    table = org.tenant.table
    job = run(jobs.publish_job(table, run(jobs.create_job(table, department_id=org.sales.dept_id, title="Rep")).job_id))
    reviewer = aws.connect(org.manager)
    aws.subscribe(reviewer, "r", APPLICATIONS, job=global_ids.encode("JobPosting", job.job_id))
    application = run(applications.apply_to_job(table, job.job_id, org.employee.emp_id))
    since = aws.since()
    run(applications.set_application_status(table, job.job_id, application.app_id, ApplicationStatus.REVIEWING))
    batch = since.records()
    assert len(of_kind(batch, "INSERT", "AuditEvent")) == 1

    with calls.listening() as log:
        result = aws.stream(batch)

    assert result == {"organisations": 1, "delivered": 1}
    delivered = [m for m in sent_to(reviewer) if m["type"] == "next"]
    assert len(delivered) == 1 and delivered[0]["id"] == "r"
    change = delivered[0]["payload"]["data"]["applicationChanged"]
    assert change["action"] == "application.setStatus" and change["application"]["status"] == "REVIEWING"
    assert change["cursor"]
    assert [m["type"] for m in sent_to(watcher)] == ["connection_ack"]
    read = [pk for call in log.calls for pk in call.partition_keys()]
    assert read.count(f"ORG#{org.tenant.org_id}#LIVE") == 1  # one Query: every subscriber of the organisation
    assert not [pk for pk in read if keys.in_tenant(pk, other.org_id)]


def test_fan_out__a_terminated_subscriber_is_closed_4403_and_gets_nothing(aws: Aws, org: Org) -> None:
    watcher = aws.connect(org.employee)
    aws.subscribe(watcher, "d", DIRECTORY)
    since = aws.since()
    run(employees.terminate_employee(org.tenant.table, org.employee.emp_id))
    batch = since.records()
    assert of_kind(batch, "MODIFY", "Employee") and of_kind(batch, "INSERT", "AuditEvent")

    aws.stream(batch)

    told = aws.management.posted[watcher]
    assert [m["type"] for m in told] == ["connection_ack", "ping"]
    assert told[-1]["payload"]["close"]["code"] == 4403
    assert watcher in aws.management.deleted
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])


def test_fan_out__a_role_changed_subscriber_is_refused_at_delivery(aws: Aws, org: Org) -> None:
    watcher = aws.connect(org.employee)
    aws.subscribe(watcher, "d", DIRECTORY)
    since = aws.since()
    run(
        employees.update_employee(
            org.tenant.table, org.employee.emp_id, expected_version=org.employee.version, role=Role.MANAGER
        )
    )
    # Only the audit event: the delivery's own check (the token's role is not the employee's) refuses.
    aws.stream(of_kind(since.records(), "INSERT", "AuditEvent"))

    told = aws.management.posted[watcher]
    assert [m["type"] for m in told] == ["connection_ack", "ping"]
    assert told[-1]["payload"]["close"]["code"] == 4403 and "role" in told[-1]["payload"]["close"]["reason"]
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])


def test_fan_out__a_gone_connection_s_items_are_deleted(aws: Aws, org: Org) -> None:
    connection_id = aws.connect(org.manager, domain=GONE_DOMAIN)  # its ack went nowhere: gone already
    aws.subscribe(connection_id, "d", DIRECTORY, domain=GONE_DOMAIN)
    assert [s.operation_id for s in live_items(org.tenant).subscriptions] == ["d"]
    since = aws.since()
    run(
        employees.update_employee(
            org.tenant.table, org.employee.emp_id, expected_version=org.employee.version, first_name="Renamed"
        )
    )

    aws.stream(since.records())

    assert live_items(org.tenant) == live_connections.LiveItems({}, [])


def test_subscribe_with_after__replays_what_was_missed__then_recorded_for_the_fan_out(aws: Aws, org: Org) -> None:
    table = org.tenant.table
    job = run(jobs.publish_job(table, run(jobs.create_job(table, department_id=org.sales.dept_id, title="Rep")).job_id))
    job_id = global_ids.encode("JobPosting", job.job_id)
    first = aws.connect(org.manager)
    aws.subscribe(first, "r", APPLICATIONS, job=job_id)
    application = run(applications.apply_to_job(table, job.job_id, org.employee.emp_id))
    since = aws.since()
    run(applications.set_application_status(table, job.job_id, application.app_id, ApplicationStatus.REVIEWING))
    aws.stream(since.records())
    (seen,) = [m for m in sent_to(first) if m["type"] == "next"]
    cursor = seen["payload"]["data"]["applicationChanged"]["cursor"]
    aws.socket("$disconnect", first)
    # Missed while disconnected: another application, and the first one accepted.
    run(applications.apply_to_job(table, job.job_id, org.tenant.employee(org.sales).emp_id))
    run(applications.set_application_status(table, job.job_id, application.app_id, ApplicationStatus.ACCEPTED))

    second = aws.connect(org.manager)
    resumed = APPLICATIONS.replace("($job: ID!)", "($job: ID!, $after: String)").replace(
        "applicationChanged(jobPostingId: $job)", "applicationChanged(jobPostingId: $job, after: $after)"
    )
    aws.subscribe(second, "r", resumed, job=job_id, after=cursor)

    replayed = [m["payload"]["data"]["applicationChanged"] for m in sent_to(second) if m["type"] == "next"]
    assert [(change["action"], change["application"]["status"]) for change in replayed] == [
        ("application.apply", "APPLIED"),
        ("application.setStatus", "ACCEPTED"),
    ]
    assert [s.operation_id for s in live_items(org.tenant).subscriptions] == ["r"]


def test_subscribe_with_a_forged_after__error_bad_user_input_nothing_recorded(aws: Aws, org: Org) -> None:
    connection_id = aws.connect(org.tenant.admin)
    aws.subscribe(connection_id, "x", "subscription A($a: String) { auditEventAdded(after: $a) { action } }", a="nope")

    error = aws.management.posted[connection_id][-1]
    assert error["type"] == "error"
    assert [e["extensions"]["code"] for e in error["payload"]] == ["BAD_USER_INPUT"]
    assert live_items(org.tenant).subscriptions == []


def test_fan_out__a_revoked_api_key_s_connection_is_closed_4403(aws: Aws, org: Org) -> None:
    key, secret = run(api_keys.create_api_key(org.tenant.table, name="Dashboard", role=Role.ADMIN))
    connection_id = f"key{next(_ids)}"
    aws.socket("$connect", connection_id)
    aws.socket("$default", connection_id, {"type": "connection_init", "payload": {"Authorization": f"Bearer {secret}"}})
    aws.subscribe(connection_id, "a", AUDIT)
    assert aws.management.posted[connection_id] == [{"type": "connection_ack"}]
    since = aws.since()
    run(api_keys.revoke_api_key(org.tenant.table, key.key_id))
    batch = since.records()
    assert of_kind(batch, "MODIFY", "ApiKey") and of_kind(batch, "INSERT", "AuditEvent")

    aws.stream(batch)

    told = aws.management.posted[connection_id]
    assert [m["type"] for m in told] == ["connection_ack", "ping"]  # closed before the revocation's own event
    assert told[-1]["payload"]["close"] == {"code": 4403, "reason": "the API key was revoked"}
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])


def test_fan_out__a_revocation_s_audit_event_without_the_key_s_record__the_key_is_refused_4403(
    aws: Aws, org: Org
) -> None:
    # On AWS a transaction's records may be on different shards, so in different batches: the
    # delivery's check reads the key itself, not only its organisation.
    key, secret = run(api_keys.create_api_key(org.tenant.table, name="Dashboard", role=Role.ADMIN))
    connection_id = f"key{next(_ids)}"
    aws.socket("$connect", connection_id)
    aws.socket("$default", connection_id, {"type": "connection_init", "payload": {"Authorization": f"Bearer {secret}"}})
    aws.subscribe(connection_id, "a", AUDIT)
    since = aws.since()
    run(api_keys.revoke_api_key(org.tenant.table, key.key_id))
    audit_only = of_kind(since.records(), "INSERT", "AuditEvent")
    assert len(audit_only) == 1

    aws.stream(audit_only)

    told = aws.management.posted[connection_id]
    assert [m["type"] for m in told] == ["connection_ack", "ping"]  # no `next`: its revocation is not sent to it
    assert told[-1]["payload"]["close"] == {"code": 4403, "reason": "the API key was revoked"}
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])


def test_fan_out__a_connection_whose_token_expired_is_closed_4403_at_its_next_event(aws: Aws, org: Org) -> None:
    token = issue_token(
        aws.settings, subject=org.manager.emp_id, org_id=org.manager.org_id, role=org.manager.role.value, ttl_seconds=2
    )
    connection_id = f"exp{next(_ids)}"
    aws.socket("$connect", connection_id)
    aws.socket("$default", connection_id, {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    aws.subscribe(connection_id, "d", DIRECTORY)
    later = f"exp{next(_ids)}"
    aws.socket("$connect", later)
    aws.socket("$default", later, {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    assert aws.management.posted[connection_id] == aws.management.posted[later] == [{"type": "connection_ack"}]
    time.sleep(2.1)
    since = aws.since()
    org.tenant.employee(org.sales)

    aws.stream(since.records())
    # The other connection's next message finds its token expired too: 4403, not 4401.
    aws.subscribe(later, "d", DIRECTORY)

    for closed in (connection_id, later):
        told = aws.management.posted[closed]
        assert [m["type"] for m in told] == ["connection_ack", "ping"]
        assert told[-1]["payload"]["close"]["code"] == 4403 and "expired" in told[-1]["payload"]["close"]["reason"]
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])


# --- a token from sign-in: its session's standing, not the token's expiry -------------------------


def signed_in_connection(aws: Aws, org: Org, *, ttl_seconds: int) -> tuple[str, Session]:
    """A connection of the manager's sign-in session (a token with its ``sid``), subscribed to the directory."""
    token, session = signed_in(aws.settings, org.tenant, org.manager, ttl_seconds=ttl_seconds)
    connection_id = f"sid{next(_ids)}"
    aws.socket("$connect", connection_id)
    aws.socket("$default", connection_id, {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    aws.subscribe(connection_id, "d", DIRECTORY)
    assert aws.management.posted[connection_id] == [{"type": "connection_ack"}]
    return connection_id, session


def test_fan_out__token_expired_session_signed_in__the_next_event_is_delivered(aws: Aws, org: Org) -> None:
    connection_id, session = signed_in_connection(aws, org, ttl_seconds=2)
    time.sleep(2.1)
    since = aws.since()
    org.tenant.employee(org.sales)

    aws.stream(since.records())

    assert [m["type"] for m in aws.management.posted[connection_id]] == ["connection_ack", "next"]
    assert connection_id not in aws.management.deleted
    # The session is read again only when it would end: the item says when.
    recorded = run(live_connections.get_connection(org.tenant.table, connection_id))
    assert recorded is not None and recorded.token_expires_at == session.expires_at.replace(microsecond=0)
    # And a message after the token's expiry goes on too.
    aws.subscribe(connection_id, "e", DIRECTORY)
    assert [m["type"] for m in aws.management.posted[connection_id]] == ["connection_ack", "next"]
    assert len(live_items(org.tenant).subscriptions) == 2


def test_fan_out__token_expired_session_signed_out__closed_4403_at_its_next_event(aws: Aws, org: Org) -> None:
    connection_id, session = signed_in_connection(aws, org, ttl_seconds=2)
    assert run(sessions.end_session(org.tenant.table, org.manager.emp_id, session.session_id, sessions.SIGNED_OUT))
    time.sleep(2.1)
    since = aws.since()
    org.tenant.employee(org.sales)

    aws.stream(of_kind(since.records(), "INSERT", "AuditEvent"))  # the session's record aside

    told = aws.management.posted[connection_id]
    assert [m["type"] for m in told] == ["connection_ack", "ping"]
    assert told[-1]["payload"]["close"] == {"code": 4403, "reason": "the session ended: sign in again"}
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])


def test_fan_out__signed_out__the_session_s_record_closes_it_4403_at_once(aws: Aws, org: Org) -> None:
    connection_id, session = signed_in_connection(aws, org, ttl_seconds=600)
    since = aws.since()
    assert run(sessions.end_session(org.tenant.table, org.manager.emp_id, session.session_id, sessions.SIGNED_OUT))
    batch = since.records()
    assert of_kind(batch, "MODIFY", "Session")

    aws.stream(batch)

    told = aws.management.posted[connection_id]
    assert [m["type"] for m in told] == ["connection_ack", "ping"]
    assert told[-1]["payload"]["close"] == {"code": 4403, "reason": "the session ended: sign in again"}
    assert connection_id in aws.management.deleted
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])


def test_fan_out__signed_out_everywhere__the_mark_closes_its_sessions_4403(aws: Aws, org: Org) -> None:
    connection_id, _session = signed_in_connection(aws, org, ttl_seconds=600)
    other = aws.connect(org.employee)  # another person's connection stays
    since = aws.since()
    run(sessions.sign_out_everywhere(org.tenant.table, org.manager.emp_id))
    batch = since.records()
    assert of_kind(batch, "INSERT", "SignedOut")

    aws.stream(batch)

    told = aws.management.posted[connection_id]
    assert told[-1]["payload"]["close"] == {"code": 4403, "reason": "signed out everywhere: sign in again"}
    assert set(live_items(org.tenant).connections) == {other}


# --- a session's subscription re-sent without ``after`` on its next connection: resumed ---------


def test_resume__disconnected_then_resubscribed_without_after__the_gap_s_events_come(aws: Aws, org: Org) -> None:
    token, _session = signed_in(aws.settings, org.tenant, org.manager, ttl_seconds=600)
    init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
    first = f"res{next(_ids)}"
    aws.socket("$connect", first)
    aws.socket("$default", first, init)
    aws.subscribe(first, "d", DIRECTORY)
    since = aws.since()
    seen = org.tenant.employee(org.sales)
    aws.stream(since.records())
    assert [m["payload"]["data"]["employeeChanged"]["employee"]["id"] for m in sent_to(first)[1:]] == [
        global_ids.encode("Employee", seen.emp_id)
    ]
    aws.socket("$disconnect", first)
    # Written while the client waits to reconnect: nobody listens.
    missed = [org.tenant.employee(org.sales), org.tenant.employee(org.sales)]

    second = f"res{next(_ids)}"
    aws.socket("$connect", second)
    aws.socket("$default", second, init)
    aws.subscribe(second, "d", DIRECTORY)  # as graphql-ws re-sends it: the first payload, no ``after``

    replayed = [m["payload"]["data"]["employeeChanged"]["employee"]["id"] for m in sent_to(second)[1:]]
    assert replayed == [global_ids.encode("Employee", e.emp_id) for e in missed]
    # And it goes on live from there.
    since = aws.since()
    later = org.tenant.employee(org.sales)
    aws.stream(since.records())
    assert sent_to(second)[-1]["payload"]["data"]["employeeChanged"]["employee"]["id"] == global_ids.encode(
        "Employee", later.emp_id
    )


def test_resume__another_session_or_a_token_without_one_starts_from_now(aws: Aws, org: Org) -> None:
    token, _session = signed_in(aws.settings, org.tenant, org.manager, ttl_seconds=600)
    first = f"res{next(_ids)}"
    aws.socket("$connect", first)
    aws.socket("$default", first, {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    aws.subscribe(first, "d", DIRECTORY)
    aws.socket("$disconnect", first)
    org.tenant.employee(org.sales)

    other_token, _other = signed_in(aws.settings, org.tenant, org.manager, ttl_seconds=600)
    other = f"res{next(_ids)}"
    aws.socket("$connect", other)
    aws.socket("$default", other, {"type": "connection_init", "payload": {"Authorization": f"Bearer {other_token}"}})
    aws.subscribe(other, "d", DIRECTORY)
    no_session = aws.connect(org.manager)
    aws.subscribe(no_session, "d", DIRECTORY)

    assert aws.management.posted[other] == aws.management.posted[no_session] == [{"type": "connection_ack"}]


def test_resume__a_subscription_item_written_before_cursors_were_kept__closes_saving_nothing(
    aws: Aws, org: Org, client: DynamoDBClient
) -> None:
    token, session = signed_in(aws.settings, org.tenant, org.manager, ttl_seconds=600)
    connection_id = f"res{next(_ids)}"
    aws.socket("$connect", connection_id)
    aws.socket("$default", connection_id, {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    aws.subscribe(connection_id, "d", DIRECTORY)
    (recorded,) = live_items(org.tenant).subscriptions
    assert recorded.topic is not None and recorded.cursor is not None
    # The item as the earlier layout wrote it: no topic, no cursor.
    key = layout.GATEWAY_SUBSCRIPTION.key_at(org.tenant.org_id, connection_id, "d")
    client.update_item(
        TableName=aws.table_name,
        Key={"PK": {"S": key.pk}, "SK": {"S": key.sk}},
        UpdateExpression="REMOVE topic, #c",
        ExpressionAttributeNames={"#c": "cursor"},
    )
    assert live_items(org.tenant).subscriptions[0].cursor is None

    aws.socket("$disconnect", connection_id)

    assert live_items(org.tenant) == live_connections.LiveItems({}, [])
    name = resume_points.subscription_hash(recorded.topic)
    assert run(resume_points.find(org.tenant.table, org.manager.emp_id, session.session_id, name, now())) is None


def test_resume__after_a_close_the_server_made__the_gap_s_events_come(aws: Aws, org: Org) -> None:
    token, _session = signed_in(aws.settings, org.tenant, org.manager, ttl_seconds=600)
    init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
    first = f"res{next(_ids)}"
    aws.socket("$connect", first)
    aws.socket("$default", first, init)
    aws.subscribe(first, "d", DIRECTORY)
    aws.socket("$default", first, {"type": "bogus"})  # closed 4400 by the server, its items deleted
    assert aws.management.posted[first][-1]["payload"]["close"]["code"] == 4400
    assert live_items(org.tenant) == live_connections.LiveItems({}, [])
    missed = org.tenant.employee(org.sales)

    second = f"res{next(_ids)}"
    aws.socket("$connect", second)
    aws.socket("$default", second, init)
    aws.subscribe(second, "d", DIRECTORY)

    replayed = [m["payload"]["data"]["employeeChanged"]["employee"]["id"] for m in sent_to(second)[1:]]
    assert replayed == [global_ids.encode("Employee", missed.emp_id)]
