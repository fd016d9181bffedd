"""The single table, seen through one scope: every DynamoDB request goes through here.

A Table checks the partition key of every request against its scope before sending it and
every item it receives after, batches and retries BatchGetItem, pages Queries, and turns
DynamoDB's refusals into the typed errors of ``datastore.errors``. It sends each request
inside ``signing_for(scope)``, so with role settings the request is signed with the scope's
own credentials (``datastore/credentials.py``).
"""

from __future__ import annotations

import contextvars
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from datastore import attempts, keys
from datastore.credentials import signing_for
from datastore.errors import (
    AlreadyWritten,
    DatastoreError,
    InProgress,
    InvalidInput,
    ScopeViolation,
    Unavailable,
)
from datastore.items import Item
from datastore.pagination import Page, PageQuery, PageRequest, StartKey
from datastore.retention import AuditRetention
from datastore.scope import Scope, TenantScope
from datastore.transact import Op
from datastore.validation import page_size

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")

BATCH_GET_LIMIT: Final = 100
BATCH_WRITE_LIMIT: Final = 25
TRANSACT_LIMIT: Final = 100

# AWS error codes this module acts on.
CONDITIONAL_CHECK_FAILED: Final = "ConditionalCheckFailedException"
TRANSACTION_CANCELED: Final = "TransactionCanceledException"
# A ClientRequestToken reused within ten minutes for a different transaction.
IDEMPOTENT_PARAMETER_MISMATCH: Final = "IdempotentParameterMismatchException"
# A ClientRequestToken whose first transaction has not finished.
TRANSACTION_IN_PROGRESS: Final = "TransactionInProgressException"
REASON_CONDITION_FAILED: Final = "ConditionalCheckFailed"
REASON_TRANSACTION_CONFLICT: Final = "TransactionConflict"
REASON_THROTTLED: Final = ("ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded")
REASON_NONE: Final = "None"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded exponential backoff with full jitter (AWS Architecture Blog, 2015)."""

    attempts: int = 8
    base_seconds: float = 0.025
    cap_seconds: float = 1.0

    def delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.cap_seconds, self.base_seconds * 2**attempt))


DEFAULT_RETRY: Final = RetryPolicy()


@dataclass(frozen=True, slots=True)
class QueryResult:
    items: list[Item]
    # True when the partition holds more matching items after the last one returned.
    has_more: bool


class Table:
    def __init__(
        self,
        client: DynamoDBClient,
        name: str,
        scope: Scope,
        *,
        fanout: Executor | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], None] = time.sleep,
        retention: AuditRetention | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.scope = scope
        self._fanout = fanout
        self._retry = retry
        self._sleep = sleep
        # How long the audit events of writes through this Table are kept (datastore/retention.py).
        self.retention = AuditRetention() if retention is None else retention

    def with_scope(self, scope: Scope) -> Table:
        """The same table for ``scope``; it learns organisations' retentions anew (a fresh
        AuditRetention with the same default), so what one Table was told stays with it."""
        return Table(
            self.client,
            self.name,
            scope,
            fanout=self._fanout,
            retry=self._retry,
            sleep=self._sleep,
            retention=AuditRetention(self.retention.default_days),
        )

    @property
    def tenant(self) -> TenantScope:
        """The tenant this Table speaks for; tenant operations refuse any other scope."""
        if not isinstance(self.scope, TenantScope):
            raise ScopeViolation(f"{self.scope.name} is not a tenant scope")
        return self.scope

    # --- guard ----------------------------------------------------------------------------

    def _require_read(self, partition_key: str) -> None:
        require_read(self.scope, partition_key)

    def _require_write(self, partition_key: str) -> None:
        if not self.scope.may_write(partition_key):
            raise ScopeViolation(f"{self.scope.name} may not write partition {partition_key!r}")

    def _require_check(self, partition_key: str) -> None:
        if not self.scope.may_check(partition_key):
            raise ScopeViolation(f"{self.scope.name} may not check partition {partition_key!r}")

    # --- reads ----------------------------------------------------------------------------

    def get(self, key: keys.Key, *, consistent: bool = False) -> Item | None:
        self._require_read(key.pk)
        response = self._call(
            self.client.get_item,
            TableName=self.name,
            Key=key.wire(),
            ConsistentRead=consistent,
            ReturnConsumedCapacity="TOTAL",
        )
        item = response.get("Item")
        return None if item is None else admit(self.scope, item, keys.PK)

    def batch_get(self, wanted: Sequence[keys.Key]) -> list[Item | None]:
        """Items for ``wanted`` in the order asked, None for a miss.

        Duplicates are read once; calls carry at most 100 keys, in chunks of even size
        (``even_chunks``). This is the one place that cuts a batch: with a fan-out executor
        the chunks run concurrently, the first on the caller's own thread and the rest on
        the executor.
        """
        for key in wanted:
            self._require_read(key.pk)
        distinct = list(dict.fromkeys(wanted))
        chunks = even_chunks(distinct, BATCH_GET_LIMIT)
        found: dict[keys.Key, Item] = {}
        if len(chunks) > 1 and self._fanout is not None:
            # Each chunk runs in a copy of the caller's context, so its calls are recorded in
            # the caller's CallLog (a context can be entered by one thread at a time).
            others = [
                self._fanout.submit(contextvars.copy_context().run, self._batch_get_chunk, chunk)
                for chunk in chunks[1:]
            ]
            found.update(self._batch_get_chunk(chunks[0]))
            for other in others:
                found.update(other.result())
        else:
            for chunk in chunks:
                found.update(self._batch_get_chunk(chunk))
        return [found.get(key) for key in wanted]

    def _batch_get_chunk(self, chunk: Sequence[keys.Key]) -> dict[keys.Key, Item]:
        found: dict[keys.Key, Item] = {}
        pending: list[dict[str, Any]] = [key.wire() for key in chunk]
        for attempt in range(self._retry.attempts):
            response = self._call(
                self.client.batch_get_item,
                RequestItems={self.name: {"Keys": pending}},
                ReturnConsumedCapacity="TOTAL",
            )
            for item in admit_all(self.scope, response.get("Responses", {}).get(self.name, []), keys.PK):
                found[keys.Key(item[keys.PK]["S"], item[keys.SK]["S"])] = item
            pending = response.get("UnprocessedKeys", {}).get(self.name, {}).get("Keys", [])
            if not pending:
                return found
            if attempt + 1 < self._retry.attempts:
                self._sleep(self._retry.delay(attempt))
        raise Unavailable(f"BatchGetItem left {len(pending)} keys unprocessed after {self._retry.attempts} tries")

    def query(
        self,
        partition_key: str,
        *,
        index: str | None = None,
        sk_prefix: str | None = None,
        descending: bool = False,
        limit: int,
        start_key: StartKey | None = None,
        consistent: bool = False,
    ) -> QueryResult:
        """Up to ``limit`` items of one partition, following DynamoDB's 1 MB pages."""
        self._require_read(partition_key)
        partition_attribute = keys.GSI1PK if index == keys.GSI1 else keys.PK
        params = query_params(self.name, partition_key, index, sk_prefix, descending, consistent, start_key)
        # One item more than asked tells whether a next page exists without a second call.
        wanted = limit + 1
        items: list[Item] = []
        exclusive_start = None if start_key is None else wire_key(start_key)
        while True:
            page_params = dict(params, Limit=wanted - len(items))
            if exclusive_start is not None:
                page_params["ExclusiveStartKey"] = exclusive_start
            response = self._call(self.client.query, **page_params)
            items.extend(admit_all(self.scope, response["Items"], partition_attribute))
            exclusive_start = response.get("LastEvaluatedKey")
            if len(items) >= wanted or exclusive_start is None:
                break
        return QueryResult(items[:limit], has_more=len(items) > limit)

    def query_page(
        self,
        partition_key: str,
        request: PageRequest,
        convert: Callable[[Item], T],
        *,
        index: str | None = None,
        sk_prefix: str | None = None,
    ) -> Page[T]:
        """One page of a list, each item with the start key that resumes after it."""
        page_size(request.first)
        result = self.query(
            partition_key,
            index=index,
            sk_prefix=sk_prefix,
            descending=request.descending,
            limit=request.first,
            start_key=request.after,
        )
        return Page(
            [convert(item) for item in result.items],
            [self.start_key_of(item, index) for item in result.items],
            result.has_more,
        )

    def page(self, query: PageQuery[T], request: PageRequest) -> Page[T]:
        """One page of the list ``query`` names."""
        return self.query_page(
            query.partition_key, request, query.convert, index=query.index, sk_prefix=query.sk_prefix
        )

    def get_many(self, wanted: Sequence[keys.Key], convert: Callable[[Item], T]) -> list[T | None]:
        return [None if item is None else convert(item) for item in self.batch_get(wanted)]

    @staticmethod
    def start_key_of(item: Item, index: str | None = None) -> StartKey:
        return start_key_of(item, index)

    # --- writes ---------------------------------------------------------------------------

    def write(self, ops: Sequence[Op], *, token: str | None = None) -> None:
        """Apply ``ops`` atomically: one conditional write if alone, else one transaction.

        ``token`` is the transaction's ClientRequestToken; DynamoDB refusing it because it
        already committed a different transaction under it is AlreadyWritten.
        """
        if not ops:
            return
        for op in ops:
            if op.kind == "ConditionCheck":
                self._require_check(op.partition_key)
            else:
                self._require_write(op.partition_key)
        if len(ops) == 1 and ops[0].kind != "ConditionCheck":
            self._write_one(ops[0])
        else:
            self._transact(ops, token)

    def batch_write(self, puts: Sequence[Item] = (), deletes: Sequence[keys.Key] = ()) -> None:
        """Put and delete items unconditionally, 25 a BatchWriteItem, retrying what is left.

        Not atomic, and never conditional: for bulk work on data nobody else writes meanwhile
        (a restore holds its organisation locked, datastore/lifecycle/restore.py). Every key
        is checked against the scope first; a key may appear once only.
        """
        requests: list[dict[str, Any]] = []
        for item in puts:
            self._require_write(item[keys.PK]["S"])
            requests.append({"PutRequest": {"Item": item}})
        for key in deletes:
            self._require_write(key.pk)
            requests.append({"DeleteRequest": {"Key": key.wire()}})
        for start in range(0, len(requests), BATCH_WRITE_LIMIT):
            pending = requests[start : start + BATCH_WRITE_LIMIT]
            for attempt in range(self._retry.attempts):
                try:
                    with signing_for(self.scope):
                        response = self.client.batch_write_item(
                            RequestItems={self.name: pending},  # type: ignore[dict-item]
                            ReturnConsumedCapacity="TOTAL",
                        )
                except ClientError as error:
                    raise _unavailable(error, write=True) from None
                except BotoCoreError as error:
                    raise _unavailable(error, write=True) from None
                pending = cast("list[dict[str, Any]]", response.get("UnprocessedItems", {}).get(self.name, []))
                if not pending:
                    break
                if attempt + 1 < self._retry.attempts:
                    self._sleep(self._retry.delay(attempt))
            else:
                tries = self._retry.attempts
                raise Unavailable(f"BatchWriteItem left {len(pending)} items unprocessed after {tries} tries")

    def _old_on_failure(self, op: Op) -> dict[str, str]:
        """Ask for the item a failed condition saw only when the scope may read it.

        An identity or domain marker item belongs to no tenant (a tenant's check on another
        organisation's domain must not bring that organisation's item back even into memory).
        """
        return {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"} if self.scope.may_read(op.partition_key) else {}

    def _write_one(self, op: Op) -> None:
        methods: dict[str, Callable[..., Any]] = {
            "Put": self.client.put_item,
            "Update": self.client.update_item,
            "Delete": self.client.delete_item,
        }
        method = methods[op.kind]
        try:
            with signing_for(self.scope):
                method(TableName=self.name, ReturnConsumedCapacity="TOTAL", **self._old_on_failure(op), **op.params)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == CONDITIONAL_CHECK_FAILED:
                raise op.on_failed(cast("Item | None", error.response.get("Item"))) from None
            raise _unavailable(error, write=True) from None
        except BotoCoreError as error:
            raise _unavailable(error, write=True) from None

    def _transact(self, ops: Sequence[Op], token: str | None) -> None:
        if len(ops) > TRANSACT_LIMIT:
            raise ValueError(f"a transaction holds at most {TRANSACT_LIMIT} items")
        request: dict[str, Any] = {
            "TransactItems": [
                {op.kind: {"TableName": self.name, **self._old_on_failure(op), **op.params}} for op in ops
            ],
            "ReturnConsumedCapacity": "TOTAL",
        }
        if token is not None:
            request["ClientRequestToken"] = token
        for attempt in range(self._retry.attempts):
            try:
                with signing_for(self.scope):
                    self.client.transact_write_items(**request)
                return
            except ClientError as error:
                reasons = error.response.get("CancellationReasons")
                code = error.response.get("Error", {}).get("Code")
                if code == IDEMPOTENT_PARAMETER_MISMATCH and token is not None:
                    raise AlreadyWritten(None) from None
                if code == TRANSACTION_IN_PROGRESS and token is not None:
                    raise InProgress() from None
                if code != TRANSACTION_CANCELED or not reasons:
                    raise _unavailable(error, write=True) from None
                for op, reason in zip(ops, reasons, strict=False):
                    if reason.get("Code") == REASON_CONDITION_FAILED:
                        item = reason.get("Item")
                        raise op.on_failed(None if item is None else dict(item)) from None
                if not any(
                    reason.get("Code") in (REASON_TRANSACTION_CONFLICT, *REASON_THROTTLED) for reason in reasons
                ):
                    raise _unavailable(error, write=True) from None
            except BotoCoreError as error:
                raise _unavailable(error, write=True) from None
            # Another transaction held one of the items: nothing was written, so try again.
            if attempt + 1 < self._retry.attempts:
                self._sleep(self._retry.delay(attempt))
        raise Unavailable(f"the transaction kept conflicting after {self._retry.attempts} tries")

    # --- plumbing -------------------------------------------------------------------------

    def _call(self, method: Callable[..., Any], **params: Any) -> dict[str, Any]:
        try:
            with signing_for(self.scope):
                response: dict[str, Any] = method(**params)
        except ClientError as error:
            raise _unavailable(error) from None
        except BotoCoreError as error:
            raise _unavailable(error) from None
        return response


def even_chunks(values: Sequence[T], limit: int) -> list[Sequence[T]]:
    """``values`` in as few chunks of at most ``limit`` as can be, their sizes within one of
    each other: 101 keys go out as 51 and 50, not 100 and 1.

    The chunks of a batch run concurrently, and the batch is as slow as its largest call:
    DynamoDB (and DynamoDB Local's engine threads) answer two calls of 51 keys side by side
    in about the time of one, where a call of 100 keys takes about twice as long. The
    number of calls, and the capacity they consume, are the same either way.
    """
    count = -(-len(values) // limit)
    if count <= 1:
        return [values] if values else []
    size, extra = divmod(len(values), count)
    bounds = [i * size + min(i, extra) for i in range(count + 1)]
    return [values[bounds[i] : bounds[i + 1]] for i in range(count)]


def wire_key(start_key: StartKey) -> dict[str, dict[str, str]]:
    return {name: {"S": value} for name, value in start_key.items()}


def query_params(
    table_name: str,
    partition_key: str,
    index: str | None,
    sk_prefix: str | None,
    descending: bool,
    consistent: bool,
    start_key: StartKey | None,
) -> dict[str, Any]:
    """A Query's parameters but its Limit and ExclusiveStartKey (either Table's, checked by the caller)."""
    partition_attribute = keys.GSI1PK if index == keys.GSI1 else keys.PK
    sort_attribute = keys.GSI1SK if index == keys.GSI1 else keys.SK
    if start_key is not None:
        validate_start_key(start_key, partition_key, index, sk_prefix)
    params: dict[str, Any] = {
        "TableName": table_name,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {"#pk": partition_attribute},
        "ExpressionAttributeValues": {":pk": {"S": partition_key}},
        "ScanIndexForward": not descending,
        "ReturnConsumedCapacity": "TOTAL",
    }
    if index is not None:
        params["IndexName"] = index
    else:
        params["ConsistentRead"] = consistent
    if sk_prefix is not None:
        params["KeyConditionExpression"] += " AND begins_with(#sk, :prefix)"
        params["ExpressionAttributeNames"]["#sk"] = sort_attribute
        params["ExpressionAttributeValues"][":prefix"] = {"S": sk_prefix}
    return params


def validate_start_key(start_key: StartKey, partition_key: str, index: str | None, sk_prefix: str | None) -> None:
    expected = {keys.PK, keys.SK} | ({keys.GSI1PK, keys.GSI1SK} if index == keys.GSI1 else set())
    sort_attribute = keys.GSI1SK if index == keys.GSI1 else keys.SK
    valid = (
        set(start_key) == expected
        and all(isinstance(value, str) for value in start_key.values())
        and keys.start_key_partition(start_key, index) == partition_key
        and (sk_prefix is None or start_key[sort_attribute].startswith(sk_prefix))
    )
    if not valid:
        raise InvalidInput("after", "the cursor does not belong to this list")


def start_key_of(item: Item, index: str | None = None) -> StartKey:
    names: tuple[str, ...] = (keys.PK, keys.SK)
    if index == keys.GSI1:
        names += (keys.GSI1PK, keys.GSI1SK)
    return {name: item[name]["S"] for name in names}


def admit(scope: Scope, item: Item, partition_attribute: str) -> Item:
    """``item`` if its partition is one ``scope`` may read; a ScopeViolation otherwise."""
    return admit_all(scope, [item], partition_attribute)[0]


def admit_all(scope: Scope, items: list[Item], partition_attribute: str) -> list[Item]:
    """``items`` if every one's partition is one ``scope`` may read; a ScopeViolation for the
    first that is not. One loop for a page rather than a call per item (a Query's, a batch's)."""
    may_read = scope.may_read
    for item in items:
        partition_key = item.get(partition_attribute, {}).get("S", "")
        if not may_read(partition_key):
            raise ScopeViolation(f"{scope.name} received an item of {partition_key!r}")
    return items


def require_read(scope: Scope, partition_key: str) -> None:
    if not scope.may_read(partition_key):
        raise ScopeViolation(f"{scope.name} may not read partition {partition_key!r}")


def _unavailable(error: Exception, *, write: bool = False) -> DatastoreError:
    """The typed form of a failed call, called right after it; the message names no backend
    exception.

    A write may have been applied unless DynamoDB refused it outright (a 4xx such as
    throttling) or the connection was never made, and no earlier attempt of the call may
    have reached DynamoDB (``attempts.reached``): ``error`` is botocore's last attempt's.
    """
    earlier = write and attempts.reached()
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if "Throttl" in code or "LimitExceeded" in code or "ThroughputExceeded" in code:
            return Unavailable("DynamoDB is throttling requests", maybe_written=earlier, cause=code)
        if status >= 500:
            return Unavailable("DynamoDB failed to answer", maybe_written=write, cause=code)
        return Unavailable("DynamoDB refused the request", maybe_written=earlier, cause=code)
    cause = type(error).__name__
    if isinstance(error, EndpointConnectionError | ConnectTimeoutError):  # this attempt sent nothing
        return Unavailable("DynamoDB could not be reached", maybe_written=earlier, cause=cause)
    if isinstance(error, ReadTimeoutError):
        return Unavailable("DynamoDB did not answer in time", maybe_written=write, cause=cause)
    # A dropped connection, a garbled answer: what was sent may have been applied.
    return Unavailable("DynamoDB could not be reached", maybe_written=write, cause=cause)
