"""The naive baseline: the product's schema, but every resolver calls the datastore per parent.

Loaders with the product's interface whose every ``get``/``page`` is its own blocking call:
no batching, no per-request cache. Installed only in the naive server process (bench.serve).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from datastore import applications, by_id, departments, employees, jobs
from datastore.by_id import Kind
from datastore.pagination import Page
from datastore.table import Table
from graphql_api.execution.fields import Deferred
from graphql_api.schema.loaders import ListKey, Runner


class PerCall:
    def __init__(self, run: Runner, fn: Callable[[Any], Any], first: Callable[[], None]) -> None:
        self._run, self._fn, self._first = run, fn, first

    async def get(self, key: Any) -> Any:
        self._first()
        return await self._run(self._fn, key)

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
    def __init__(self, run: Runner, table: Table, first: Callable[[], None]) -> None:
        self._run, self._table, self._first = run, table, first

    async def page(self, key: ListKey) -> Page[Any]:
        self._first()
        page: Page[Any] = await self._run(key.fetch, self._table, key.parent, key.request())
        return page


class NaiveLoaders:
    """The product's loaders' interface; ``before_first_load`` is called before every read (the
    session acts on the first)."""

    def __init__(self, table: Table, run: Runner, *, before_first_load: Callable[[], None] | None = None) -> None:
        first = before_first_load or (lambda: None)
        self.table = table
        self.employee = PerCall(run, lambda e: employees.get_employee(table, e), first)
        self.department = PerCall(run, lambda d: departments.get_department(table, d), first)
        self.job = PerCall(run, lambda j: jobs.get_job(table, j), first)
        self.application = PerCall(run, lambda k: applications.get_application(table, *k), first)
        self.employee_id_by_email = PerCall(run, lambda e: employees.find_employee_id_by_email(table, e), first)
        self.organization = PerCall(run, lambda k: by_id.get_by_id(table, [(Kind.ORGANIZATION, k)])[0], first)
        self.subscription = PerCall(run, lambda k: by_id.get_by_id(table, [(Kind.SUBSCRIPTION, k)])[0], first)
        self.lists = PerCallLists(run, table, first)


def install() -> None:
    # The request session (graphql_api/request/session.py) builds each request's loaders.
    import graphql_api.request.session as session

    session.Loaders = NaiveLoaders  # type: ignore[misc,assignment]
