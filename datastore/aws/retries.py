"""Whether a failed DynamoDB call is tried again: the one decision, for every call of the client.

A call's attempt fails in one of these ways (``Kind``), read from what the transport or
DynamoDB said (``failure_of``):

- not sent: the connection was never made (refused, unresolvable, not made in time). Nothing
  reached DynamoDB.
- no answer: the request went out and no whole answer came back (the read timeout, a dropped
  connection, an answer cut short or garbled). It may have been applied.
- throttled: DynamoDB refused it for capacity (ThrottlingException,
  ProvisionedThroughputExceeded, RequestLimitExceeded, LimitExceeded, or a transaction
  cancelled for a throttled item). Not applied.
- server error: a 5xx (InternalServerError, ServiceUnavailable). DynamoDB failed while
  handling it, so it may have been applied.
- conflict: a transaction cancelled by another one holding an item (TransactionConflict), or
  a write refused for a transaction in flight on its item. Not applied.
- in progress: a transaction under the same ClientRequestToken is still being applied.
- refused: any other 4xx (a failed condition, a cancelled transaction's condition, an
  invalid request, an access refused). Sending it again would be refused again.

Whether the attempt may be made again (``Attempts.after``) depends on the call: a read, and a
write that is idempotent by its payload (``idempotent``: a TransactWriteItems carrying a
ClientRequestToken, which DynamoDB applies once however often it is sent within ten minutes,
and a PutItem conditioned on its item not existing, which can create it once only), is
retried after any failure but a refusal. Any other write is retried only when its attempt
cannot have been applied (not sent, throttled, conflict); after a failure that may have been
applied it fails at once, ``maybe_written``: its caller retries it under the same
idempotency key, which makes the retry safe. A refusal is never retried.

Attempts are bounded by ``Schedule.attempts`` (DYNAMODB_MAX_ATTEMPTS, the first included),
conflicts by their own, longer and quicker, schedule (another writer's transaction holds the
item for milliseconds), and both by the call's deadline: a retry whose backoff and an attempt
as long as the last one would end past it is not made, so the caller answers the attempt's
failure rather than sleeping through its deadline. The backoff is exponential with full
jitter: the n-th retry waits a random time up to ``base * 2 ** (n - 1)``, at most ``cap``;
botocore's standard mode waits so (base 1 s, cap 20 s).

What a batch call leaves unprocessed (BatchGetItem's ``UnprocessedKeys``, BatchWriteItem's
``UnprocessedItems``) is no failure of the call: the Table asks for it again in a new call,
on the policy's ``unprocessed`` schedule and within the same deadline (``datastore/table/scoped.py``).

A write fails ``maybe_written`` when any of its attempts may have been applied, not only the
last: a refused connection on the second attempt says nothing of the first, which timed out.

A conditional put of a new item whose earlier attempt may have been applied can be refused
on its retry by its own first attempt: the item exists because this call created it. When
DynamoDB returns the item its condition saw (the caller asked for it,
``ReturnValuesOnConditionCheckFailure``) and it is the item put, attribute for attribute,
the put is done (``Verdict.WRITTEN``): a new item's id is a ULID minted for this call
(``datastore/values/ids.py``), and an item at a fixed key (a stream lease, the layout stamp) holds
its writer's name or the time it was written, so no other writer puts the very same item.
Otherwise the call cannot tell its own put from another writer's, or from its own changed
since, and fails ``maybe_written``. Refused on its first attempt, the item was there before:
a refusal.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any, Final

from aiodynamo import errors as dynamo_errors

from datastore.aws.connections import NotSent
from datastore.tenancy import keys

# What only reads (never changes an item, however often sent); anything else is a write.
READS: Final = frozenset(
    {"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "DescribeTable", "DescribeTimeToLive"}
)

THROTTLING_CODES: Final = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "LimitExceededException",
    }
)
# What a cancelled transaction's reasons say of an item it did not write.
REASON_CONFLICT: Final = "TransactionConflict"
REASONS_THROTTLED: Final = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
REASON_NONE: Final = "None"
TRANSACTION_CANCELED: Final = "TransactionCanceledException"
# A single-item write refused because a transaction in flight holds its item.
TRANSACTION_CONFLICT: Final = "TransactionConflictException"
TRANSACTION_IN_PROGRESS: Final = "TransactionInProgressException"
CONDITIONAL_CHECK_FAILED: Final = "ConditionalCheckFailedException"

_NEW_ITEM: Final = re.compile(r"\s*attribute_not_exists\s*\(\s*(#?\w+)\s*\)\s*")


class Kind(Enum):
    NOT_SENT = "not sent"
    NO_ANSWER = "no answer"
    THROTTLED = "throttled"
    SERVER_ERROR = "server error"
    CONFLICT = "conflict"
    IN_PROGRESS = "in progress"
    REFUSED = "refused"


# Failures after which the attempt may have been applied.
MAY_HAVE_APPLIED: Final = frozenset({Kind.NO_ANSWER, Kind.SERVER_ERROR, Kind.IN_PROGRESS})
# Failures after which it was certainly not: a write of any kind may be sent again.
NOT_APPLIED: Final = frozenset({Kind.NOT_SENT, Kind.THROTTLED, Kind.CONFLICT})


@dataclass(frozen=True, slots=True)
class Failure:
    """One attempt's failure: its kind, DynamoDB's error code (or the transport's failure),
    and DynamoDB's answer when it gave one (a transaction's CancellationReasons, the item a
    failed condition saw)."""

    kind: Kind
    code: str
    body: Mapping[str, Any] | None = None


def failure_of(error: BaseException) -> Failure:
    """What ``error`` (the transport's, or aiodynamo's for DynamoDB's answer) says of the attempt."""
    if isinstance(error, NotSent):
        return Failure(Kind.NOT_SENT, type(error).__name__)
    status, body = _answer_of(error)
    if status is None:
        # NoAnswer, Broken, a timeout, anything else on the way: sent, and nothing known since.
        return Failure(Kind.NO_ANSWER, type(error).__name__)
    # DynamoDB's code when its answer named one; else aiodynamo's name for it, or the status.
    code = _code(body) or (f"HTTP {status}" if isinstance(error, dynamo_errors.UnknownError) else type(error).__name__)
    if status >= 500:
        return Failure(Kind.SERVER_ERROR, code, body)
    if code in THROTTLING_CODES:
        return Failure(Kind.THROTTLED, code, body)
    if code == TRANSACTION_CONFLICT:
        return Failure(Kind.CONFLICT, code, body)
    if code == TRANSACTION_IN_PROGRESS:
        return Failure(Kind.IN_PROGRESS, code, body)
    if code == TRANSACTION_CANCELED and body is not None:
        reasons = {str(reason.get("Code")) for reason in body.get("CancellationReasons") or () if reason}
        reasons.discard(REASON_NONE)
        if REASON_CONFLICT in reasons and reasons <= REASONS_THROTTLED | {REASON_CONFLICT}:
            return Failure(Kind.CONFLICT, REASON_CONFLICT, body)
        if reasons and reasons <= REASONS_THROTTLED:
            return Failure(Kind.THROTTLED, next(iter(sorted(reasons))), body)
    return Failure(Kind.REFUSED, code, body)


def _answer_of(error: BaseException) -> tuple[int | None, Mapping[str, Any] | None]:
    """The HTTP status and error body of DynamoDB's answer; (None, None) when none came."""
    if isinstance(error, dynamo_errors.UnknownError):
        try:
            parsed = json.loads(error.body)
        except ValueError:
            parsed = None
        return error.status, parsed if isinstance(parsed, dict) else None
    if isinstance(error, dynamo_errors.InternalDynamoError):
        return 500, None
    if isinstance(error, dynamo_errors.ServiceUnavailable):
        return 503, None
    if isinstance(error, dynamo_errors.NoCredentialsFound):
        return 403, None  # nothing was sent; nothing would be with the same credentials
    if isinstance(error, dynamo_errors.AIODynamoError):
        # aiodynamo keeps DynamoDB's error body as its argument.
        body = error.args[0] if error.args else None
        return 400, body if isinstance(body, dict) else None
    return None, None


def _code(body: Mapping[str, Any] | None) -> str:
    kind = None if body is None else body.get("__type")
    return kind.rsplit("#", 1)[-1] if isinstance(kind, str) else ""


def idempotent(operation: str, payload: Mapping[str, Any]) -> bool:
    """Whether sending ``payload`` again can never apply it twice."""
    if operation in READS:
        return True
    if operation == "TransactWriteItems":
        return bool(payload.get("ClientRequestToken"))
    return creates_new(operation, payload)


def creates_new(operation: str, payload: Mapping[str, Any]) -> bool:
    """Whether ``payload`` is a PutItem conditioned on its item not existing (a new id's)."""
    if operation != "PutItem":
        return False
    condition = payload.get("ConditionExpression")
    matched = _NEW_ITEM.fullmatch(condition) if isinstance(condition, str) else None
    if matched is None:
        return False
    name = matched.group(1)
    if name.startswith("#"):
        name = (payload.get("ExpressionAttributeNames") or {}).get(name, "")
    return name in (keys.PK, keys.SK)


@dataclass(frozen=True, slots=True)
class Schedule:
    """At most ``attempts`` tries in all; the n-th retry after a random wait up to
    ``base * 2 ** (n - 1)`` seconds, at most ``cap`` (full jitter)."""

    attempts: int
    base: float
    cap: float

    def delay(self, retry: int) -> float:
        return random.uniform(0, min(self.cap, self.base * 2 ** (retry - 1)))


# botocore's standard mode: the n-th retry waits up to 2 ** (n - 1) s, at most 20 s.
STANDARD_BASE: Final = 1.0
STANDARD_CAP: Final = 20.0
# Transaction conflicts: 8 tries, the first retry within 25 ms, none waiting over 1 s.
CONFLICTS: Final = Schedule(attempts=8, base=0.025, cap=1.0)
# What a batch left unprocessed, asked for again (datastore/table/scoped.py): as quick and as many.
UNPROCESSED: Final = Schedule(attempts=8, base=0.025, cap=1.0)


@dataclass(frozen=True, slots=True)
class Policy:
    """How every call of one client is retried: ``standard`` for all failures but conflicts;
    ``unprocessed`` is the Table's schedule for the keys and items a batch call succeeded
    without (``UnprocessedKeys``, ``UnprocessedItems``), asked for again in a new call."""

    standard: Schedule
    conflicts: Schedule = CONFLICTS
    unprocessed: Schedule = UNPROCESSED

    @classmethod
    def of(cls, max_attempts: int) -> Policy:
        """DYNAMODB_MAX_ATTEMPTS tries with botocore's standard backoff, and conflicts' own."""
        return cls(Schedule(max(1, max_attempts), STANDARD_BASE, STANDARD_CAP))

    def attempts(self, operation: str, payload: Mapping[str, Any], deadline: float | None = None) -> Attempts:
        return Attempts(self, operation, payload, deadline)


# DYNAMODB_MAX_ATTEMPTS's default (datastore/config.py).
DEFAULT_POLICY: Final = Policy.of(2)


class Verdict(Enum):
    RETRY = "retry"
    GIVE_UP = "give up"
    # The call's own earlier attempt applied it: done (``Attempts.after``).
    WRITTEN = "written"


@dataclass(slots=True)
class Attempts:
    """One call's attempts: after each failure, whether and when to try again."""

    policy: Policy
    operation: str
    payload: Mapping[str, Any]
    # When the call must have ended (time.monotonic()'s clock; None: no deadline).
    deadline: float | None = None
    made: int = 0
    # Whether an attempt so far may have been applied.
    reached: bool = False
    delay: float = 0.0
    write: bool = field(init=False)
    idempotent: bool = field(init=False)

    def __post_init__(self) -> None:
        self.write = self.operation not in READS
        self.idempotent = idempotent(self.operation, self.payload)

    @property
    def maybe_written(self) -> bool:
        """A write any of whose attempts may have been applied."""
        return self.write and self.reached

    def after(self, failure: Failure, took: float) -> Verdict:
        """The verdict on the attempt that failed with ``failure`` after ``took`` seconds; with
        RETRY, ``delay`` is the wait before the next."""
        self.made += 1
        if failure.kind is Kind.REFUSED:
            if self.reached and self._own_item_found(failure):
                return Verdict.WRITTEN
            return Verdict.GIVE_UP
        self.reached = self.reached or failure.kind in MAY_HAVE_APPLIED
        if not self.idempotent and failure.kind not in NOT_APPLIED:
            return Verdict.GIVE_UP  # it may have been applied: sent again, it could be twice
        schedule = self.policy.conflicts if failure.kind is Kind.CONFLICT else self.policy.standard
        if self.made >= schedule.attempts:
            return Verdict.GIVE_UP
        delay = schedule.delay(self.made)
        if self.deadline is not None and time.monotonic() + delay + took >= self.deadline:
            return Verdict.GIVE_UP  # the retry could not end in time
        self.delay = delay
        return Verdict.RETRY

    async def wait(self) -> None:
        await asyncio.sleep(self.delay)

    def _own_item_found(self, failure: Failure) -> bool:
        """A put of a new item refused because the item it puts is there, as put."""
        if failure.code != CONDITIONAL_CHECK_FAILED or not creates_new(self.operation, self.payload):
            return False
        found = None if failure.body is None else failure.body.get("Item")
        return isinstance(found, dict) and _canonical(found) == _canonical(self.payload.get("Item"))


def _canonical(value: Any) -> Any:
    """An attribute value (or item) in one form however DynamoDB spells it back: numbers by
    value, binaries as base64, sets unordered."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((tag, member),) = value.items()
            if tag == "N" and isinstance(member, str):
                return ("N", _number(member))
            if tag == "B":
                return ("B", _base64(member))
            if tag == "NS" and isinstance(member, list):
                return ("NS", frozenset(_number(entry) for entry in member))
            if tag == "SS" and isinstance(member, list):
                return ("SS", frozenset(member))
            if tag == "BS" and isinstance(member, list):
                return ("BS", frozenset(_base64(entry) for entry in member))
        return {name: _canonical(member) for name, member in value.items()}
    if isinstance(value, list):
        return [_canonical(member) for member in value]
    return value


def _number(text: str) -> Decimal | str:
    try:
        return Decimal(text).normalize()
    except InvalidOperation:
        return text


def _base64(value: Any) -> Any:
    return base64.b64encode(value).decode("ascii") if isinstance(value, bytes | bytearray) else value
