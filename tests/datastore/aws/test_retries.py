"""The one retry policy (datastore/aws/retries.py) of every call through the event loop's client,
and a Table's transactions under it: conflicts and throttled cancellations retried by send.

The policy's table of cases runs each call against DynamoDB Local through a TCP proxy
(tests/tcp_proxy.py) that refuses connections, mutes or cuts answers of requests it forwarded;
DynamoDB's own refusals that DynamoDB Local never sends (throttling, 5xx, transaction
conflicts, a token's transaction in progress) are answered in its place by a send hook
(datastore/aws/exchange.py), which also counts the attempts at the client boundary. What each
write did is read back from the table itself.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

import pytest
from aiodynamo.errors import exception_from_response
from aiodynamo.http.types import Request, Response
from yarl import URL

from datastore.aws import retries
from datastore.aws.calls import CallLog, listening
from datastore.aws.client import AsyncDynamo, Mirror, send
from datastore.aws.connections import Broken, NoAnswer, NotSent
from datastore.aws.retries import Kind, Policy, Schedule, Verdict
from datastore.config import DatastoreSettings
from datastore.errors import InProgress, Refused, Unavailable
from datastore.kinds import layout
from datastore.kinds.entities import AuditEvent, Department
from datastore.table import by_id
from datastore.table.pagination import PageRequest
from datastore.tenants import departments, employees
from datastore.values import ids
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import TEST_RETRY, Tenant
from tests.datastore.faults import (
    PROVISIONED_THROUGHPUT_EXCEEDED,
    THROTTLING_ERROR,
    TRANSACTION_CONFLICT,
    TransactFaults,
    injected,
    operation_of,
)
from tests.tcp_proxy import Answers, TcpProxy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# --- the policy's table of cases, end to end ------------------------------------------------

# What happens to one attempt at the client boundary.
PASS: Final = "pass"  # through the proxy to DynamoDB Local and back
REFUSED: Final = "refused"  # the proxy is not listening: not sent
MUTED: Final = "no-answer"  # forwarded, applied by DynamoDB Local, its answer never returned: read timeout
CUT: Final = "dropped"  # forwarded, the connection closed as the answer comes
THROTTLED: Final = "throttled"  # answered 400 ProvisionedThroughputExceeded / Throttling
SERVER_ERROR: Final = "500"  # answered 500 InternalServerError
CONFLICT: Final = "conflict"  # answered 400 TransactionCanceled, reason TransactionConflict
IN_PROGRESS: Final = "in-progress"  # answered 400 TransactionInProgress
CHANGED: Final = "changed"  # another writer changes the item, then the attempt passes
FORWARDED: Final = frozenset({PASS, MUTED, CUT, CHANGED})

# What the call comes to.
OK: Final = "ok"
UNAVAILABLE: Final = "Unavailable"
MAYBE_WRITTEN: Final = "Unavailable, maybeWritten"
REFUSAL: Final = "Refused"
STILL_IN_PROGRESS: Final = "InProgress"

# One attempt waits this long for an answer (a muted one, then NoAnswer).
READ_TIMEOUT: Final = 1.0
# Quick backoff: the tests exercise the bounds, not the waits.
FAST: Final = Policy(Schedule(2, 0.005, 0.05), Schedule(8, 0.005, 0.05))

GET = "GetItem"
GET_INVALID = "GetItem-invalid-key"
PUT = "PutItem"
PUT_INVALID = "PutItem-invalid-item"
PUT_NEW = "PutItem-new"
PUT_NEW_TAKEN = "PutItem-new-id-taken"
UPDATE = "UpdateItem"
DELETE = "DeleteItem"
TRANSACT_TOKEN = "TransactWriteItems-token"
TRANSACT_PLAIN = "TransactWriteItems"


@dataclass(frozen=True)
class Case:
    call: str
    faults: tuple[str, ...]  # one per attempt; PASS after them
    outcome: str
    attempts: int  # seen at the client boundary
    applied: int | None = None  # times the write took effect (None: a read)
    deadline: bool = False  # the call's deadline: one muted attempt and a little more

    @property
    def id(self) -> str:
        faults = ",".join(self.faults) or PASS
        return f"{self.call}[{faults}]{'-deadline' if self.deadline else ''}"


CASES: Final = [
    # Reads are idempotent: every failure but a refusal is retried.
    Case(GET, (THROTTLED,), OK, 2),
    Case(GET, (SERVER_ERROR,), OK, 2),
    Case(GET, (REFUSED,), OK, 2),
    Case(GET, (MUTED,), OK, 2),
    Case(GET, (CUT,), OK, 2),
    Case(GET, (THROTTLED, THROTTLED, THROTTLED), UNAVAILABLE, 2),  # DYNAMODB_MAX_ATTEMPTS, then given up
    Case(GET, (MUTED,), UNAVAILABLE, 1, deadline=True),  # a retry would end past the deadline: none
    Case(GET_INVALID, (), REFUSAL, 1),  # DynamoDB Local's own ValidationException: never retried
    # A write that may not be idempotent: retried only when it cannot have been applied.
    Case(PUT, (REFUSED,), OK, 2, applied=1),
    Case(PUT, (MUTED,), MAYBE_WRITTEN, 1, applied=1),  # sent once, applied, the answer lost
    Case(PUT, (CUT,), MAYBE_WRITTEN, 1, applied=1),
    Case(PUT, (SERVER_ERROR,), MAYBE_WRITTEN, 1, applied=0),  # a 5xx may have been applied
    Case(PUT, (REFUSED, MUTED), MAYBE_WRITTEN, 2, applied=1),
    Case(PUT, (MUTED, REFUSED), MAYBE_WRITTEN, 1, applied=1),
    Case(PUT, (THROTTLED, THROTTLED), UNAVAILABLE, 2, applied=0),
    Case(PUT_INVALID, (), REFUSAL, 1, applied=0),  # refused each time: certainly not written
    Case(UPDATE, (THROTTLED,), OK, 2, applied=1),  # throttled: not applied, so retried
    Case(UPDATE, (MUTED,), MAYBE_WRITTEN, 1, applied=1),
    Case(DELETE, (MUTED,), MAYBE_WRITTEN, 1, applied=1),
    Case(TRANSACT_PLAIN, (MUTED,), MAYBE_WRITTEN, 1, applied=1),
    Case(TRANSACT_PLAIN, (CONFLICT,), OK, 2, applied=1),  # cancelled: nothing written
    Case(TRANSACT_PLAIN, (CONFLICT,) * 8, UNAVAILABLE, 8, applied=0),  # conflicts' own bound
    # A put of a new id: its retry finds its own first put, or cannot tell.
    Case(PUT_NEW, (MUTED,), OK, 2, applied=1),
    Case(PUT_NEW, (SERVER_ERROR,), OK, 2, applied=1),
    Case(PUT_NEW, (MUTED, CHANGED), MAYBE_WRITTEN, 2, applied=1),
    Case(PUT_NEW_TAKEN, (), REFUSAL, 1, applied=0),  # someone else's item: the caller's Conflict
    # A transaction with a token: DynamoDB applies it once however often it is sent.
    Case(TRANSACT_TOKEN, (MUTED,), OK, 2, applied=1),
    Case(TRANSACT_TOKEN, (CUT,), OK, 2, applied=1),
    Case(TRANSACT_TOKEN, (CONFLICT,), OK, 2, applied=1),
    Case(TRANSACT_TOKEN, (MUTED, THROTTLED), MAYBE_WRITTEN, 2, applied=1),
    Case(TRANSACT_TOKEN, (IN_PROGRESS,), OK, 2, applied=1),
    Case(TRANSACT_TOKEN, (IN_PROGRESS, IN_PROGRESS), STILL_IN_PROGRESS, 2, applied=0),
]


def _error(status: int, kind: str, **extra: Any) -> Response:
    body = {"__type": f"com.amazonaws.dynamodb.v20120810#{kind}", "message": "injected", **extra}
    return Response(status, json.dumps(body).encode())


ANSWERS: Final = {
    THROTTLED: _error(400, "ProvisionedThroughputExceededException"),
    SERVER_ERROR: _error(500, "InternalServerError"),
    CONFLICT: _error(
        400,
        "TransactionCanceledException",
        CancellationReasons=[{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}],
    ),
    IN_PROGRESS: _error(400, "TransactionInProgressException"),
}


class Boundary:
    """The send hook: each attempt of the call under test takes the next fault."""

    def __init__(self, proxy: TcpProxy, operation: str, faults: tuple[str, ...], change: Any) -> None:
        self.proxy = proxy
        self.operation = operation
        self.faults = list(faults)
        self.change = change
        self.attempts: list[bytes] = []
        self.forwarded = 0

    async def __call__(self, request: Request) -> Response | None:
        if operation_of(request) != self.operation:
            return None
        self.attempts.append(request.body or b"")
        fault = self.faults.pop(0) if self.faults else PASS
        if fault == REFUSED:
            self.proxy.refuse()
        else:
            self.proxy.accept()
        self.proxy.answers = {MUTED: Answers.MUTE, CUT: Answers.CUT}.get(fault, Answers.PASS)
        if fault == CHANGED:
            self.change()
        self.forwarded += fault in FORWARDED
        return ANSWERS.get(fault)


def payload_of(call: str, table: str, key: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    add_one = {"UpdateExpression": "ADD n :one", "ExpressionAttributeValues": {":one": {"N": "1"}}}
    # A number DynamoDB spells back otherwise ("1.5") and a binary: the own-put check reads values.
    item = {**key, "n": {"N": "1"}, "price": {"N": "1.50"}, "blob": {"B": base64.b64encode(b"\x00\x01").decode()}}
    new = {"ConditionExpression": "attribute_not_exists(PK)", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    transact = {"TransactItems": [{"Update": {"TableName": table, "Key": key, **add_one}}]}
    payloads: dict[str, tuple[str, dict[str, Any]]] = {
        GET: ("GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}),
        GET_INVALID: ("GetItem", {"TableName": table, "Key": {"PK": key["PK"]}}),
        PUT: ("PutItem", {"TableName": table, "Item": item}),
        PUT_INVALID: ("PutItem", {"TableName": table, "Item": {**item, "SK": {"N": "1"}}}),
        PUT_NEW: ("PutItem", {"TableName": table, "Item": item, **new}),
        PUT_NEW_TAKEN: ("PutItem", {"TableName": table, "Item": item, **new}),
        UPDATE: ("UpdateItem", {"TableName": table, "Key": key, **add_one}),
        DELETE: ("DeleteItem", {"TableName": table, "Key": key}),
        TRANSACT_TOKEN: ("TransactWriteItems", {**transact, "ClientRequestToken": ids.new_id()}),
        TRANSACT_PLAIN: ("TransactWriteItems", transact),
    }
    return payloads[call]


@pytest.fixture(scope="module")
def proxy(dynamodb_endpoint: str) -> Iterator[TcpProxy]:
    port = URL(dynamodb_endpoint).port
    assert port is not None
    with TcpProxy(port) as running:
        yield running


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_call__fault_at_the_client_boundary__the_policys_outcome(
    case: Case, proxy: TcpProxy, client: DynamoDBClient, table_name: str, settings: DatastoreSettings
) -> None:
    key = {"PK": {"S": f"ORG#{ids.new_id()}"}, "SK": {"S": "RETRY"}}
    operation, payload = payload_of(case.call, table_name, key)
    if case.call in (GET, DELETE, PUT_NEW_TAKEN):
        client.put_item(TableName=table_name, Item={**key, "n": {"N": "7"}})  # there before the call

    def change() -> None:
        client.update_item(
            TableName=table_name,
            Key=key,
            UpdateExpression="SET other = :x",
            ExpressionAttributeValues={":x": {"S": "x"}},
        )  # type: ignore[dict-item]

    boundary = Boundary(proxy, operation, case.faults, change)
    proxy.connections = 0
    mirror = Mirror(
        URL(proxy.endpoint_url),
        settings.region,
        connect_timeout=0.5,
        read_timeout=READ_TIMEOUT,
        attempts=settings.max_attempts,
        pool_size=4,
    )
    dynamo = AsyncDynamo(
        mirror, None, policy=replace(FAST, standard=replace(FAST.standard, attempts=settings.max_attempts))
    )
    dynamo.hooks.add(boundary)

    async def main() -> dict[str, Any] | Exception:
        deadline = time.monotonic() + READ_TIMEOUT + 0.3 if case.deadline else None
        try:
            return await send(dynamo.client(deadline=deadline), operation, payload)
        except Unavailable as error:
            return error
        finally:
            await dynamo.aclose()

    try:
        with listening() as log:
            result = asyncio.run(main())
    finally:
        proxy.accept()
        proxy.answers = Answers.PASS

    assert outcome_of(result) == case.outcome, result
    if case.outcome == REFUSAL:
        assert isinstance(result, Refused)
        assert result.code == (
            "ValidationException" if case.call in (GET_INVALID, PUT_INVALID) else "ConditionalCheckFailedException"
        )
    if case.call == PUT_NEW_TAKEN:
        assert isinstance(result, Refused) and result.body["Item"]["n"] == {"N": "7"}  # what the condition saw
    assert len(boundary.attempts) == case.attempts
    assert len(set(boundary.attempts)) == 1  # every attempt the same request: a token's retry carries its token
    assert proxy.connections == boundary.forwarded  # a refused connection sent nothing
    assert [call.operation for call in log.snapshot() if call.operation == operation] == [
        operation
    ]  # one call recorded
    if case.applied is not None:
        assert applied(client, table_name, key, case.call) == case.applied


def outcome_of(result: dict[str, Any] | Exception) -> str:
    if isinstance(result, InProgress):
        return STILL_IN_PROGRESS
    if isinstance(result, Refused):
        return REFUSAL
    if isinstance(result, Unavailable):
        return MAYBE_WRITTEN if result.maybe_written else UNAVAILABLE
    return OK


def applied(client: DynamoDBClient, table_name: str, key: dict[str, Any], call: str) -> int:
    """How many times the call's write took effect, read from the table."""
    item = client.get_item(TableName=table_name, Key=key, ConsistentRead=True).get("Item")  # type: ignore[arg-type]
    if call == DELETE:
        return int(item is None)
    if call == PUT_NEW_TAKEN:
        return int(item is not None and item["n"] != {"N": "7"})
    if call in (PUT, PUT_NEW, PUT_INVALID):
        return int(item is not None)
    return 0 if item is None else int(item["n"]["N"])  # type: ignore[typeddict-item]


# --- the policy's bounds and its reading of payloads ---------------------------------------


@pytest.mark.parametrize("attempts", [1, 2, 5])
def test_schedule__botocores_standard_backoff__none_after_the_last_try(attempts: int) -> None:
    policy = Policy.of(attempts)
    calls_attempts = policy.attempts("GetItem", {})
    waits = []
    while calls_attempts.after(retries.Failure(Kind.THROTTLED, "ThrottlingException"), 0.0) is Verdict.RETRY:
        waits.append(calls_attempts.delay)

    # botocore's standard schedule: the n-th retry waits up to 2 ** (n - 1) s; none after the last try.
    assert len(waits) == attempts - 1 and calls_attempts.made == attempts
    assert all(0 <= wait <= 2 ** (n - 1) for n, wait in enumerate(waits, start=1))


def test_schedule__conflicts__eight_tries_within_a_second_each() -> None:
    attempts = Policy.of(2).attempts("TransactWriteItems", {})
    waits = []
    while attempts.after(retries.Failure(Kind.CONFLICT, "TransactionConflict"), 0.0) is Verdict.RETRY:
        waits.append(attempts.delay)

    assert attempts.made == 8 and not attempts.maybe_written
    assert all(0 <= wait <= min(1.0, 0.025 * 2 ** (n - 1)) for n, wait in enumerate(waits, start=1))


def test_deadline__backoff_and_an_attempt_past_it__no_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request with 0.2 s left whose retry would first wait 1 s: given up at once, so its
    caller answers the attempt's error (UNAVAILABLE), not a TIMEOUT after the sleep."""
    monkeypatch.setattr(random, "uniform", lambda _low, high: high)  # the longest backoff: 1 s

    attempts = Policy.of(5).attempts("GetItem", {}, deadline=time.monotonic() + 0.2)

    assert attempts.after(retries.Failure(Kind.NO_ANSWER, "NoAnswer"), 0.01) is Verdict.GIVE_UP
    assert attempts.made == 1


@pytest.mark.parametrize(
    ("operation", "payload", "expected"),
    [
        ("GetItem", {}, True),
        ("Query", {}, True),
        ("BatchGetItem", {}, True),
        ("TransactWriteItems", {"ClientRequestToken": "t"}, True),
        ("TransactWriteItems", {}, False),
        ("PutItem", {"ConditionExpression": "attribute_not_exists(PK)"}, True),
        (
            "PutItem",
            {"ConditionExpression": " attribute_not_exists( #k ) ", "ExpressionAttributeNames": {"#k": "SK"}},
            True,
        ),
        (
            "PutItem",
            {"ConditionExpression": "attribute_not_exists(#k)", "ExpressionAttributeNames": {"#k": "name"}},
            False,
        ),
        ("PutItem", {"ConditionExpression": "attribute_not_exists(PK) OR #expires < :now"}, False),
        ("PutItem", {}, False),
        ("UpdateItem", {"ConditionExpression": "attribute_not_exists(PK)"}, False),
        ("DeleteItem", {}, False),
        ("BatchWriteItem", {}, False),
        ("SomeNewOperation", {}, False),  # unknown: a write, never resent blindly
    ],
)
def test_idempotent__read_from_the_payload(operation: str, payload: dict[str, Any], expected: bool) -> None:
    assert retries.idempotent(operation, payload) is expected


def _answer(kind: str, **extra: Any) -> bytes:
    return json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{kind}", "message": "m", **extra}).encode()


def _cancelled(*codes: str) -> bytes:
    reasons = [{"Code": code, "Message": "m"} if code != "None" else {"Code": "None"} for code in codes]
    return _answer("TransactionCanceledException", CancellationReasons=reasons)


@pytest.mark.parametrize(
    ("status", "body", "kind", "code"),
    [
        (400, _answer("ThrottlingException"), Kind.THROTTLED, "ThrottlingException"),
        (
            400,
            _answer("ProvisionedThroughputExceededException"),
            Kind.THROTTLED,
            "ProvisionedThroughputExceededException",
        ),
        (400, _answer("RequestLimitExceeded"), Kind.THROTTLED, "RequestLimitExceeded"),
        (500, _answer("InternalServerError"), Kind.SERVER_ERROR, "InternalDynamoError"),
        (503, b"", Kind.SERVER_ERROR, "ServiceUnavailable"),
        (502, b"<html>bad gateway</html>", Kind.SERVER_ERROR, "HTTP 502"),
        (400, _answer("TransactionConflictException"), Kind.CONFLICT, "TransactionConflictException"),
        (400, _cancelled("None", "TransactionConflict"), Kind.CONFLICT, "TransactionConflict"),
        (400, _cancelled("TransactionConflict", "ThrottlingError"), Kind.CONFLICT, "TransactionConflict"),
        (400, _cancelled("None", "ThrottlingError"), Kind.THROTTLED, "ThrottlingError"),
        (
            400,
            _cancelled("ConditionalCheckFailed", "TransactionConflict"),
            Kind.REFUSED,
            "TransactionCanceledException",
        ),
        (400, _answer("TransactionInProgressException"), Kind.IN_PROGRESS, "TransactionInProgressException"),
        (400, _answer("ConditionalCheckFailedException"), Kind.REFUSED, "ConditionalCheckFailedException"),
        (400, _answer("ValidationException"), Kind.REFUSED, "ValidationException"),
        (400, _answer("AccessDeniedException"), Kind.REFUSED, "AccessDeniedException"),
        (400, _answer("SomethingNew"), Kind.REFUSED, "SomethingNew"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_failure_of__dynamodbs_answer_as_aiodynamo_reads_it__its_kind(
    status: int, body: bytes, kind: Kind, code: str
) -> None:
    failure = retries.failure_of(exception_from_response(status, body))

    assert (failure.kind, failure.code) == (kind, code)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (NotSent("refused"), Kind.NOT_SENT),
        (NoAnswer("read timeout"), Kind.NO_ANSWER),
        (Broken("closed"), Kind.NO_ANSWER),
        (TimeoutError(), Kind.NO_ANSWER),
    ],
)
def test_failure_of__the_transports_failure__sent_or_not(error: Exception, kind: Kind) -> None:
    assert retries.failure_of(error).kind is kind


# --- a Table's transactions under the policy: cancelled, retried by send ----------------------

TRANSACT = "TransactWriteItems"
# Which of the policy's schedules bounds a transaction cancelled for each reason.
SCHEDULES: Final = {TRANSACTION_CONFLICT: TEST_RETRY.conflicts, THROTTLING_ERROR: TEST_RETRY.standard}
# What a transaction cancelled every time says, by reason: a conflict names its tries.
GIVEN_UP: Final = {
    TRANSACTION_CONFLICT: f"the transaction kept conflicting after {TEST_RETRY.conflicts.attempts} tries",
    THROTTLING_ERROR: "DynamoDB is throttling requests",
}


@pytest.fixture
def faults(dynamo: AsyncDynamo) -> Iterator[TransactFaults]:
    with injected(dynamo) as planned:
        yield planned


def audit_trail(tenant: Tenant) -> list[AuditEvent]:
    return list(run(audit.list_audit_events(tenant.table, PageRequest(first=100))).items)


def assert_headcounts_match(tenant: Tenant, *depts: Department) -> None:
    for dept in depts:
        current = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
        assert current is not None
        members = run(employees.list_department_employees(tenant.table, dept.dept_id, PageRequest(first=100)))
        assert current.headcount == len(members.items), current.name


@pytest.mark.parametrize("reason", [TRANSACTION_CONFLICT, THROTTLING_ERROR])
def test_move__cancelled_then_committed__retried_within_the_bound(
    tenant: Tenant, faults: TransactFaults, call_log: CallLog, reason: str
) -> None:
    tries = SCHEDULES[reason].attempts
    source, target = tenant.department("Source"), tenant.department("Target")
    emp = tenant.employee(source)
    trail = audit_trail(tenant)
    calls_before, sent_before = call_log.count(TRANSACT), len(faults.sent)
    faults.cancel(reason, times=tries - 1)

    moved = run(employees.move_employee(tenant.table, emp.emp_id, target.dept_id)).employee

    assert moved.department_id == target.dept_id
    assert len(faults.sent) - sent_before == tries  # every attempt the schedule allows, the last committed
    assert faults.injected == tries - 1
    assert call_log.count(TRANSACT) - calls_before == 1  # one call, whatever its attempts
    assert_headcounts_match(tenant, source, target)
    after = audit_trail(tenant)
    assert len(after) == len(trail) + 1
    assert after[0].action == "employee.move"


@pytest.mark.parametrize("reason", [TRANSACTION_CONFLICT, THROTTLING_ERROR])
def test_move__cancelled_every_time__unavailable_and_nothing_written(
    tenant: Tenant, faults: TransactFaults, reason: str
) -> None:
    source, target = tenant.department("Source"), tenant.department("Target")
    emp = tenant.employee(source)
    trail = audit_trail(tenant)
    sent_before = len(faults.sent)
    faults.cancel(reason, times=None)

    with pytest.raises(Unavailable) as given_up:
        run(employees.move_employee(tenant.table, emp.emp_id, target.dept_id, expected_version=1))

    assert str(given_up.value) == GIVEN_UP[reason]
    assert not given_up.value.maybe_written  # a cancelled transaction wrote nothing
    assert len(faults.sent) - sent_before == SCHEDULES[reason].attempts
    faults.clear()
    assert run(employees.get_employee(tenant.table, emp.emp_id, consistent=True)) == emp
    assert_headcounts_match(tenant, source, target)
    counts = run(by_id.get_many(tenant.table, layout.DEPARTMENT, [source.dept_id, target.dept_id]))
    assert [d.headcount for d in counts if d] == [1, 0]
    assert audit_trail(tenant) == trail


def test_create__exhausted_retries_under_an_idempotency_key__a_later_retry_writes_once(
    tenant: Tenant, faults: TransactFaults
) -> None:
    sent_before = len(faults.sent)
    faults.cancel(TRANSACTION_CONFLICT, times=None)
    with pytest.raises(Unavailable):
        run(departments.create_department(tenant.table, name="Ops", idempotency_key="retry-me"))
    faults.clear()
    attempts = faults.sent[sent_before:]
    assert len(attempts) == TEST_RETRY.conflicts.attempts
    tokens = {json.loads(body)["ClientRequestToken"] for body in attempts}
    assert len(tokens) == 1  # every attempt under the key's one token

    created = run(departments.create_department(tenant.table, name="Ops", idempotency_key="retry-me"))
    again = run(departments.create_department(tenant.table, name="Ops", idempotency_key="retry-me"))

    assert again == created
    names = [d.name for d in run(departments.list_departments(tenant.table, PageRequest(first=100))).items]
    assert names.count("Ops") == 1


def test_throttled_request__unavailable_with_a_clean_message(tenant: Tenant, faults: TransactFaults) -> None:
    dept = tenant.department()
    trail = audit_trail(tenant)
    faults.refuse(PROVISIONED_THROUGHPUT_EXCEEDED)

    with pytest.raises(Unavailable) as refused:
        tenant.employee(dept)

    assert str(refused.value) == "DynamoDB is throttling requests"  # no backend exception name
    assert not refused.value.maybe_written  # a throttled write was refused, never applied
    assert refused.value.__cause__ is None
    assert audit_trail(tenant) == trail
    assert_headcounts_match(tenant, dept)


def test_concurrent_moves_with_injected_conflicts__headcounts_equal_memberships(
    tenant: Tenant, faults: TransactFaults, call_log: CallLog
) -> None:
    depts = [tenant.department(f"Dept {i}") for i in range(3)]
    people = [tenant.employee(depts[i % 3]) for i in range(12)]
    trail = audit_trail(tenant)
    calls_before, sent_before = call_log.count(TRANSACT), len(faults.sent)
    faults.every(3, TRANSACTION_CONFLICT)

    def move_around(index: int) -> int:
        emp = people[index]
        moves = 0
        for step in range(1, 4):
            run(employees.move_employee(tenant.table, emp.emp_id, depts[(index + step) % 3].dept_id))
            moves += 1
        return moves

    with ThreadPoolExecutor(8) as pool:
        moves = sum(pool.map(move_around, range(len(people))))

    assert faults.injected > 0
    assert call_log.count(TRANSACT) - calls_before == moves
    assert len(faults.sent) - sent_before == moves + faults.injected
    assert_headcounts_match(tenant, *depts)
    counts = run(by_id.get_many(tenant.table, layout.DEPARTMENT, [d.dept_id for d in depts]))
    assert sum(d.headcount for d in counts if d) == len(people)
    events = audit_trail(tenant)
    assert len(events) == len(trail) + moves
