"""The single table, seen through one scope: every DynamoDB data-plane request goes through here.

A Table checks the partition key of every request against its scope before sending it and
every item it receives after, batches BatchGetItem (its even chunks in flight at once on the
event loop) and asks again for what a batch left unprocessed, pages Queries, and turns
DynamoDB's refusals into the typed errors of ``datastore.errors``. Every call is awaited on
the event loop through the one client (``datastore.aws.client.send``): signed with the
scope's own credentials when role settings are given (``datastore/aws/credentials.py``), its
attempts made as the one retry policy decides (``datastore/aws/retries.py``: throttling, 5xx,
transaction conflicts), recorded in the request's CallLog, inside the client's call
observers (tracing), its failure an ``Unavailable``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from aiodynamo.client import Client

from datastore.aws import retries
from datastore.aws.client import AsyncDynamo, ScopeKey, send
from datastore.errors import AlreadyWritten, InvalidInput, Refused, ScopeViolation, Unavailable
from datastore.table.pagination import Page, PageQuery, PageRequest, StartKey, checked_page_size
from datastore.table.retention import AuditRetention
from datastore.table.transact import Op
from datastore.tenancy import keys
from datastore.tenancy.scope import Scope, TenantScope
from datastore.values.items import Item

if TYPE_CHECKING:
    from datastore.aws.credentials import RoleCredentials

T = TypeVar("T")

BATCH_GET_LIMIT: Final = 100
BATCH_WRITE_LIMIT: Final = 25
TRANSACT_LIMIT: Final = 100

# DynamoDB's refusals this module turns into typed errors (the rest are retried, or not, by send).
CONDITIONAL_CHECK_FAILED: Final = retries.CONDITIONAL_CHECK_FAILED
TRANSACTION_CANCELED: Final = retries.TRANSACTION_CANCELED
# A ClientRequestToken reused within ten minutes for a different transaction.
IDEMPOTENT_PARAMETER_MISMATCH: Final = "IdempotentParameterMismatchException"
REASON_CONDITION_FAILED: Final = "ConditionalCheckFailed"


@dataclass(frozen=True, slots=True)
class QueryResult:
    items: list[Item]
    # True when the partition holds more matching items after the last one returned.
    has_more: bool


class Table:
    def __init__(
        self,
        dynamo: AsyncDynamo,
        name: str,
        scope: Scope,
        *,
        credentials: RoleCredentials | None = None,
        retry: retries.Policy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        deadline: float | None = None,
        retention: AuditRetention | None = None,
    ) -> None:
        self.dynamo = dynamo
        self.name = name
        self.scope = scope
        self.credentials = credentials
        # When the calls must have ended (time.monotonic()'s clock); the client's retries keep to it too.
        self.deadline = deadline
        self.observers = dynamo.observers
        # How its calls are retried (the client's policy; the tests pass a quicker one).
        self.retry = dynamo.policy if retry is None else retry
        self._signing = None if credentials is None else ScopeKey(credentials.for_scope(scope))
        self.client: Client = dynamo.client(self._signing, deadline=deadline, policy=self.retry)
        self._sleep = sleep
        # How long the audit events of writes through this Table are kept (datastore/table/retention.py).
        self.retention = AuditRetention() if retention is None else retention

    def with_scope(self, scope: Scope) -> Table:
        """The same table for ``scope``; it learns organisations' retentions anew (a fresh
        AuditRetention with the same default), so what one Table was told stays with it."""
        return Table(
            self.dynamo,
            self.name,
            scope,
            credentials=self.credentials,
            retry=self.retry,
            sleep=self._sleep,
            deadline=self.deadline,
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

    async def get(self, key: keys.Key, *, consistent: bool = False) -> Item | None:
        require_read(self.scope, key.pk)
        response = await send(
            self.client,
            "GetItem",
            {
                "TableName": self.name,
                "Key": key.wire(),
                "ConsistentRead": consistent,
                "ReturnConsumedCapacity": "TOTAL",
            },
            self.observers,
        )
        item: Item | None = response.get("Item")
        return None if item is None else admit(self.scope, item, keys.PK)

    async def batch_get(self, wanted: Sequence[keys.Key]) -> list[Item | None]:
        """Items for ``wanted`` in the order asked, None for a miss.

        Duplicates are read once; calls carry at most 100 keys, in chunks of even size
        (``even_chunks``), all in flight at once. This is the one place that cuts a batch.
        """
        for key in wanted:
            require_read(self.scope, key.pk)
        chunks = even_chunks(list(dict.fromkeys(wanted)), BATCH_GET_LIMIT)
        found: dict[keys.Key, Item] = {}
        if len(chunks) == 1:
            found = await self._batch_get_chunk(chunks[0])
        elif chunks:
            for part in await asyncio.gather(*(self._batch_get_chunk(chunk) for chunk in chunks)):
                found.update(part)
        return [found.get(key) for key in wanted]

    async def _batch_get_chunk(self, chunk: Sequence[keys.Key]) -> dict[keys.Key, Item]:
        found: dict[keys.Key, Item] = {}
        pending: list[dict[str, Any]] = [key.wire() for key in chunk]
        schedule = self.retry.unprocessed
        for attempt in range(1, schedule.attempts + 1):
            response = await send(
                self.client,
                "BatchGetItem",
                {"RequestItems": {self.name: {"Keys": pending}}, "ReturnConsumedCapacity": "TOTAL"},
                self.observers,
            )
            for item in admit_all(self.scope, response.get("Responses", {}).get(self.name, []), keys.PK):
                found[keys.Key(item[keys.PK]["S"], item[keys.SK]["S"])] = item
            pending = response.get("UnprocessedKeys", {}).get(self.name, {}).get("Keys", [])
            if not pending:
                return found
            if attempt == schedule.attempts or not await self._backoff(schedule, attempt):
                break  # no time left for another try: what is left unprocessed is the answer
        raise Unavailable(f"BatchGetItem left {len(pending)} keys unprocessed after {attempt} tries")

    async def query(
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
        require_read(self.scope, partition_key)
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
            response = await send(self.client, "Query", page_params, self.observers)
            items.extend(admit_all(self.scope, response["Items"], partition_attribute))
            exclusive_start = response.get("LastEvaluatedKey")
            if len(items) >= wanted or exclusive_start is None:
                break
        return QueryResult(items[:limit], has_more=len(items) > limit)

    async def query_page(
        self,
        partition_key: str,
        request: PageRequest,
        convert: Callable[[Item], T],
        *,
        index: str | None = None,
        sk_prefix: str | None = None,
    ) -> Page[T]:
        """One page of a list, each item with the start key that resumes after it."""
        checked_page_size(request.first)
        result = await self.query(
            partition_key,
            index=index,
            sk_prefix=sk_prefix,
            descending=request.descending,
            limit=request.first,
            start_key=request.after,
        )
        return Page(
            [convert(item) for item in result.items],
            [start_key_of(item, index) for item in result.items],
            result.has_more,
        )

    async def page(self, query: PageQuery[T], request: PageRequest) -> Page[T]:
        """One page of the list ``query`` names."""
        return await self.query_page(
            query.partition_key, request, query.convert, index=query.index, sk_prefix=query.sk_prefix
        )

    async def get_many(self, wanted: Sequence[keys.Key], convert: Callable[[Item], T]) -> list[T | None]:
        return [None if item is None else convert(item) for item in await self.batch_get(wanted)]

    @staticmethod
    def start_key_of(item: Item, index: str | None = None) -> StartKey:
        return start_key_of(item, index)

    # --- writes ---------------------------------------------------------------------------

    async def write(self, ops: Sequence[Op], *, token: str | None = None) -> None:
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
            await self._write_one(ops[0])
        else:
            await self._transact(ops, token)

    async def batch_write(self, puts: Sequence[Item] = (), deletes: Sequence[keys.Key] = ()) -> None:
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
        schedule = self.retry.unprocessed
        for start in range(0, len(requests), BATCH_WRITE_LIMIT):
            pending = requests[start : start + BATCH_WRITE_LIMIT]
            for attempt in range(1, schedule.attempts + 1):
                response = await send(
                    self.client,
                    "BatchWriteItem",
                    {"RequestItems": {self.name: pending}, "ReturnConsumedCapacity": "TOTAL"},
                    self.observers,
                )
                pending = response.get("UnprocessedItems", {}).get(self.name, [])
                if not pending or attempt == schedule.attempts or not await self._backoff(schedule, attempt):
                    break
            if pending:
                raise Unavailable(f"BatchWriteItem left {len(pending)} items unprocessed after {attempt} tries")

    def _old_on_failure(self, op: Op) -> dict[str, str]:
        """Ask for the item a failed condition saw only when the scope may read it.

        An identity or domain marker item belongs to no tenant (a tenant's check on another
        organisation's domain must not bring that organisation's item back even into memory).
        """
        return {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"} if self.scope.may_read(op.partition_key) else {}

    async def _write_one(self, op: Op) -> None:
        operation = _SINGLE_WRITES[op.kind]
        try:
            await send(
                self.client,
                operation,
                {"TableName": self.name, "ReturnConsumedCapacity": "TOTAL", **self._old_on_failure(op), **op.params},
                self.observers,
            )
        except Refused as refused:
            if refused.code == CONDITIONAL_CHECK_FAILED:
                item = refused.body.get("Item")
                raise op.on_failed(item if isinstance(item, dict) else None) from None
            raise

    async def _transact(self, ops: Sequence[Op], token: str | None) -> None:
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
        # A conflict with another transaction, or a throttled item, is retried by send (it
        # wrote nothing); so is any failure of a transaction under a token, which DynamoDB
        # applies once however often it is sent.
        try:
            await send(self.client, "TransactWriteItems", request, self.observers)
        except Refused as refused:
            if refused.code == IDEMPOTENT_PARAMETER_MISMATCH and token is not None:
                raise AlreadyWritten(None) from None
            reasons = refused.body.get("CancellationReasons") if refused.code == TRANSACTION_CANCELED else None
            for op, reason in zip(ops, reasons or (), strict=False):
                if reason.get("Code") == REASON_CONDITION_FAILED:
                    item = reason.get("Item")
                    raise op.on_failed(None if item is None else dict(item)) from None
            raise

    # --- plumbing -------------------------------------------------------------------------

    async def _backoff(self, schedule: retries.Schedule, retry: int) -> bool:
        """Wait before the ``retry``-th new call for what a batch left unprocessed; False when
        it could not end before the deadline."""
        delay = schedule.delay(retry)
        if self.deadline is not None and time.monotonic() + delay >= self.deadline:
            return False
        await self._sleep(delay)
        return True


_SINGLE_WRITES: Final = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}


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
