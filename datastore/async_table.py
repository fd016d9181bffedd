"""The single table's reads on the event loop, seen through one scope: ``Table``'s reads, awaited.

The same checks as ``datastore.table.Table``, from the same functions: the partition key of
every request is checked against the scope before it is sent and every item received after;
a Query's parameters, its cursor check, its 1 MB pages and its one-more-item look-ahead; a
BatchGetItem's even chunks of at most 100 keys, now concurrent on the loop (``gather``) where
Table runs them on its fan-out threads, and its unprocessed keys tried again with the same
backoff. Each call goes through ``datastore.async_client.send``: signed for the Table's scope,
recorded in the request's CallLog, inside the client's call observers (tracing), its failure
an ``Unavailable``. No writes: those stay on
``Table`` (boto3).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from aiodynamo.client import Client

from datastore import keys
from datastore.async_client import CallObservers, send
from datastore.errors import ScopeViolation, Unavailable
from datastore.items import Item
from datastore.pagination import Page, PageQuery, PageRequest, StartKey
from datastore.scope import Scope, TenantScope
from datastore.table import (
    BATCH_GET_LIMIT,
    DEFAULT_RETRY,
    QueryResult,
    RetryPolicy,
    admit,
    admit_all,
    even_chunks,
    query_params,
    require_read,
    start_key_of,
    wire_key,
)
from datastore.validation import page_size

T = TypeVar("T")


class AsyncTable:
    def __init__(
        self,
        client: Client,
        name: str,
        scope: Scope,
        *,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        observers: CallObservers | None = None,
        deadline: float | None = None,
    ) -> None:
        self.client = client
        self.observers = observers
        # When the calls must have ended (time.monotonic()'s clock); the client's retries keep to it too.
        self.deadline = deadline
        self.name = name
        self.scope = scope
        self._retry = retry
        self._sleep = sleep

    @property
    def tenant(self) -> TenantScope:
        """The tenant this Table speaks for; tenant operations refuse any other scope."""
        if not isinstance(self.scope, TenantScope):
            raise ScopeViolation(f"{self.scope.name} is not a tenant scope")
        return self.scope

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
        """Items for ``wanted`` in the order asked, None for a miss; duplicates read once, in
        even chunks of at most 100 keys, all in flight at once."""
        for key in wanted:
            require_read(self.scope, key.pk)
        chunks = even_chunks(list(dict.fromkeys(wanted)), BATCH_GET_LIMIT)
        found: dict[keys.Key, Item] = {}
        if len(chunks) == 1:
            found = await self._batch_get_chunk(chunks[0])
        else:
            for part in await asyncio.gather(*(self._batch_get_chunk(chunk) for chunk in chunks)):
                found.update(part)
        return [found.get(key) for key in wanted]

    async def _batch_get_chunk(self, chunk: Sequence[keys.Key]) -> dict[keys.Key, Item]:
        found: dict[keys.Key, Item] = {}
        pending: list[dict[str, Any]] = [key.wire() for key in chunk]
        for attempt in range(self._retry.attempts):
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
            if attempt + 1 < self._retry.attempts:
                delay = self._retry.delay(attempt)
                if self.deadline is not None and time.monotonic() + delay >= self.deadline:
                    break  # no time left for another try: what is left unprocessed is the answer
                await self._sleep(delay)
        raise Unavailable(f"BatchGetItem left {len(pending)} keys unprocessed after {attempt + 1} tries")

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

    async def page(self, query: PageQuery[T], request: PageRequest) -> Page[T]:
        """One page of the list ``query`` names, each item with the start key that resumes after it."""
        page_size(request.first)
        result = await self.query(
            query.partition_key,
            index=query.index,
            sk_prefix=query.sk_prefix,
            descending=request.descending,
            limit=request.first,
            start_key=request.after,
        )
        return Page(
            [query.convert(item) for item in result.items],
            [start_key_of(item, query.index) for item in result.items],
            result.has_more,
        )
