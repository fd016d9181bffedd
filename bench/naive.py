"""The naive baseline: the product's schema, but every resolver calls the datastore per parent.

Loaders with the product's interface whose every ``get``/``page`` is its own call:
no batching, no per-request cache. Installed only in the naive server process (bench.serve).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from datastore.table import by_id
from datastore.table.by_id import Kind
from datastore.table.pagination import Page
from datastore.table.scoped import Table
from datastore.tenants import employees
from graphql_api.execution.fields import Deferred
from graphql_api.execution.loaders import Admit, ListKey


class PerCall:
    def __init__(self, admit: Admit, fn: Callable[[Any], Awaitable[Any]], first: Callable[[], None]) -> None:
        self._admit, self._fn, self._first = admit, fn, first

    async def get(self, key: Any) -> Any:
        self._first()
        self._admit()
        return await self._fn(key)

    async def load(self, key: Any) -> Any:
        return await self.get(key)

    async def get_many(self, keys: list[Any]) -> dict[Any, Any]:
        """One call per parent, as naive resolvers make (repeated keys included)."""
        values = await asyncio.gather(*(self.get(key) for key in keys))
        return dict(zip(keys, values, strict=True))

    def deferred(self, key: Any, then: Callable[[Any], Any]) -> Deferred[Any]:
        """A root field's read by id (graphql_api/schema/query.py): its own call, started now."""
        call = asyncio.ensure_future(self.get(key))
        return Deferred(call, lambda: then(call.result()))


class PerCallLists:
    def __init__(self, admit: Admit, table: Table, first: Callable[[], None]) -> None:
        self._admit, self._table, self._first = admit, table, first

    async def page(self, key: ListKey) -> Page[Any]:
        self._first()
        self._admit()
        page: Page[Any] = await key.fetch(self._table, key.parent, key.request())
        return page

    def read_ahead(self, _key: ListKey) -> None:
        """Nothing: without a cache the field's own ``page`` would read it again."""
        return None


class NaiveLoaders:
    """The product's loaders' interface; ``before_first_load`` is called before every read (the
    session acts on the first)."""

    def __init__(self, table: Table, admit: Admit, *, before_first_load: Callable[[], None] | None = None) -> None:
        first = before_first_load or (lambda: None)
        self.table = table

        def one(kind: Kind) -> Callable[[Any], Awaitable[Any]]:
            async def read(key: Any) -> Any:
                return (await by_id.get_by_id(table, [(kind, key)]))[0]

            return read

        self.employee = PerCall(admit, one(Kind.EMPLOYEE), first)
        self.department = PerCall(admit, one(Kind.DEPARTMENT), first)
        self.job = PerCall(admit, one(Kind.JOB), first)
        self.application = PerCall(admit, one(Kind.APPLICATION), first)
        self.employee_id_by_email = PerCall(admit, lambda e: employees.find_employee_id_by_email(table, e), first)
        self.organization = PerCall(admit, one(Kind.ORGANIZATION), first)
        self.subscription = PerCall(admit, one(Kind.SUBSCRIPTION), first)
        self.lists = PerCallLists(admit, table, first)


def install() -> None:
    # The request session (graphql_api/request/session.py) builds each request's loaders.
    import graphql_api.request.session as session

    session.Loaders = NaiveLoaders  # type: ignore[misc,assignment]
