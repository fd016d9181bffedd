"""Per-request DataLoaders: every read of a resolver goes through one of these.

The entity loader collects the ids asked for in one stretch of the event loop, of every
kind, into one GetItem or BatchGetItem calls; the list loader collects every list page asked
for and runs their single-partition Queries concurrently. Each batch returns only when all of
its calls are done, so the next level's loads all start together and batch together again:
at most one wave of DynamoDB calls per nesting level, however many parents
(execution/batch_loader.py; a field read ahead goes out a level early, execution/fields.py).

Their calls run on the event loop (``datastore.table.scoped.Table``): no I/O thread. Before
a batch's calls go out the session may refuse them (``admit``: past the deadline, over the
request's call budget), as it refuses the session's other calls (``RequestSession.run``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, cast

from datastore.kinds.entities import (
    ApiKey,
    Application,
    AuditEvent,
    Department,
    Employee,
    JobPosting,
    Organization,
    Subscription,
)
from datastore.table import by_id
from datastore.table.by_id import Kind
from datastore.table.pagination import Page, PageQuery, PageRequest, StartKey
from datastore.table.scoped import Table
from datastore.tenants import applications, departments, employees, jobs
from datastore.values.ids import DepartmentId, EmployeeId, JobId, OrgId
from datastore.writes import audit
from graphql_api.execution.batch_loader import SharedLoader
from graphql_api.execution.fields import Deferred

P = ParamSpec("P")
R = TypeVar("R")
K = TypeVar("K")
V = TypeVar("V")

Admit = Callable[[], None]
"""Called before each call of a batch is sent; raises to refuse it (the request's session)."""

ListFetch = Callable[[Table, str | None, PageRequest], Awaitable[Page[Any]]]


@dataclass(frozen=True, slots=True)
class ListKey:
    """One page of one list: which list, whose (parent id), and which page."""

    fetch: ListFetch
    parent: str | None
    first: int
    after: tuple[tuple[str, str], ...] | None
    descending: bool

    def request(self) -> PageRequest:
        after: StartKey | None = None if self.after is None else dict(self.after)
        return PageRequest(first=self.first, after=after, descending=self.descending)


def list_key(fetch: ListFetch, parent: str | None, first: int, after: StartKey | None, descending: bool) -> ListKey:
    return ListKey(fetch, parent, first, None if after is None else tuple(sorted(after.items())), descending)


class Loader(SharedLoader[K, V]):
    """A DataLoader whose batch is one coroutine of the keys."""

    def __init__(
        self,
        admit: Admit,
        batch: Callable[[list[K]], Awaitable[list[V]]],
        *,
        before_first_load: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(before_first_load=before_first_load)
        self._admit = admit
        self._batch = batch

    async def fetch(self, keys: list[K]) -> list[V]:
        self._admit()
        return await self._batch(keys)


class EntityLoader(SharedLoader[tuple[Kind, Any], Any]):
    """Every entity read by id of one loop turn, whatever its kind, in one batch.

    One key is a GetItem, more go whole to ``datastore.table.by_id.get_by_id``, which cuts
    them into BatchGetItem calls of at most 100 keys, all in flight at once. The caller
    check's organisation and employee thus share a call with the query's own reads.
    """

    def __init__(self, admit: Admit, table: Table, *, before_first_load: Callable[[], None] | None = None) -> None:
        super().__init__(before_first_load=before_first_load)
        self._admit = admit
        self._table = table

    async def fetch(self, keys: list[tuple[Kind, Any]]) -> list[Any]:
        self._admit()
        return await by_id.get_by_id(self._table, keys)


class Entities(Generic[K, V]):
    """One kind's view of the request's entity loader: ``get``/``get_many`` by that kind's id."""

    def __init__(self, loader: EntityLoader, kind: Kind) -> None:
        self._loader = loader
        self._kind = kind

    def load(self, key: K) -> asyncio.Future[V]:
        return self._loader.load((self._kind, key))

    async def get(self, key: K) -> V:
        return cast(V, await self._loader.get((self._kind, key)))

    def deferred(self, key: K, then: Callable[[V], R]) -> Deferred[R]:
        # A string: ``Callable[[Any], R]`` itself would build a generic alias on every call.
        return self._loader.deferred((self._kind, key), cast("Callable[[Any], R]", then))

    async def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        kind = self._kind
        found = await self._loader.get_many((kind, key) for key in keys)
        return {key: value for (_, key), value in found.items()}


class ListLoader(SharedLoader[ListKey, Page[Any]]):
    """Pages of lists; the Queries of one batch run concurrently and finish together.

    Each list fails alone: a Query that fails, or a list the request's budget refuses, fails
    its own key, and the batch's other lists keep their pages. Which lists share a batch is
    the loop's timing (and a list read ahead joins the first wave's), so it must not decide
    which fields fail. A failed key stays failed for the rest of the request: its field and
    any other asking for it report the one failure (the client has retried it already)
    rather than reading it again.
    """

    def __init__(self, admit: Admit, table: Table, *, before_first_load: Callable[[], None] | None = None) -> None:
        super().__init__(before_first_load=before_first_load)
        self._admit = admit
        self._table = table

    async def fetch(self, keys: list[ListKey]) -> list[Page[Any] | Exception]:
        table = self._table
        # Every list admitted before any page's coroutine is made: a refusal (the call budget
        # spent part-way through the batch) then leaves no coroutine behind un-awaited. The
        # refused list and those after it fail with the refusal.
        admitted: list[ListKey] = []
        refusal: Exception | None = None
        for key in keys:
            try:
                self._admit()  # one list, one call or more: charged as the session charges a run
            except Exception as error:
                refusal = error
                break
            admitted.append(key)
        pages = [key.fetch(table, key.parent, key.request()) for key in admitted]
        results: list[Page[Any] | Exception]
        if len(pages) == 1:  # awaited in place: no task for the batch's one Query
            try:
                results = [await pages[0]]
            except Exception as error:
                results = [error]
        else:
            found = await asyncio.gather(*pages, return_exceptions=True)
            for outcome in found:
                if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                    raise outcome  # a cancelled Query: the batch is cancelled, not one key failed
            results = list(found)  # type: ignore[arg-type]  # BaseExceptions raised above
        if refusal is not None:
            results += [refusal] * (len(keys) - len(admitted))
        return results

    async def page(self, key: ListKey) -> Page[Any]:
        return await self.get(key)

    def read_ahead(self, key: ListKey) -> asyncio.Future[Page[Any]]:
        """The page, asked for now, before the field that reads it (fields.prefetch): that
        field's ``page`` of the same key then answers from this loader's cache."""
        return self.load(key)


# --- list fetchers: (table, parent id, page request) -> page ----------------------------------


def _pages(name: str, query: Callable[[OrgId, str | None], PageQuery[Any]]) -> ListFetch:
    """A list read as pages of the datastore's query for the tenant and the list's parent id.

    The fetcher is the list's identity in a ``ListKey`` (the loader batches and caches by
    it), so each list below is made once, at import; ``name`` is the access pattern EXPLAIN
    shows for it (execution/explain.py).
    """

    def fetch(table: Table, parent: str | None, request: PageRequest) -> Awaitable[Page[Any]]:
        return table.page(query(table.tenant.org_id, parent), request)

    fetch.__name__ = fetch.__qualname__ = name
    return fetch


def _own(parent: str | None) -> str:
    assert parent is not None  # a list of a department, job or employee has its parent's id
    return parent


departments_of_org = _pages("departments_of_org", lambda org, _: departments.departments_of(org))
employees_of_org = _pages("employees_of_org", lambda org, _: employees.employees_of(org))
employees_by_name = _pages("employees_by_name", lambda org, prefix: employees.employees_by_name(org, _own(prefix)))
employees_of_department = _pages(
    "employees_of_department", lambda org, dept: employees.department_employees(org, DepartmentId(_own(dept)))
)
open_jobs_of_org = _pages("open_jobs_of_org", lambda org, _: jobs.open_jobs_of(org))
jobs_of_org = _pages("jobs_of_org", lambda org, _: jobs.jobs_of(org))
applications_of_job = _pages(
    "applications_of_job", lambda org, job: applications.job_applications(org, JobId(_own(job)))
)
applications_of_employee = _pages(
    "applications_of_employee", lambda org, emp: applications.employee_applications(org, EmployeeId(_own(emp)))
)


def audit_events_of_org(table: Table, _parent: str | None, request: PageRequest) -> Awaitable[Page[AuditEvent]]:
    """Newest first, whatever ``request.descending`` says (the audit trail's walk, not one query)."""
    return audit.list_audit_events(table, request)


class Loaders:
    """The DataLoaders of one request, for one tenant. Never shared between requests.

    Each of them calls ``before_first_load`` just before its first load (the session's,
    ``tenant_reached``, acts on the first call of the request only), and ``admit`` before
    each call it sends.
    """

    def __init__(self, table: Table, admit: Admit, *, before_first_load: Callable[[], None] | None = None) -> None:
        self.table = table
        first = before_first_load
        self.entities = EntityLoader(admit, table, before_first_load=first)
        self.organization: Entities[str, Organization | None] = Entities(self.entities, Kind.ORGANIZATION)
        self.subscription: Entities[str, Subscription | None] = Entities(self.entities, Kind.SUBSCRIPTION)
        self.employee: Entities[str, Employee | None] = Entities(self.entities, Kind.EMPLOYEE)
        self.department: Entities[str, Department | None] = Entities(self.entities, Kind.DEPARTMENT)
        self.job: Entities[str, JobPosting | None] = Entities(self.entities, Kind.JOB)
        self.application: Entities[tuple[str, str], Application | None] = Entities(self.entities, Kind.APPLICATION)
        # Read only by a live subscriber's check at delivery (graphql_api/auth/active.py).
        self.api_key: Entities[str, ApiKey | None] = Entities(self.entities, Kind.API_KEY)

        async def ids_by_email(emails: list[str]) -> list[EmployeeId | None]:
            found = [employees.find_employee_id_by_email(table, email) for email in emails]
            return list(await asyncio.gather(*found))

        self.employee_id_by_email: Loader[str, EmployeeId | None] = Loader(admit, ids_by_email, before_first_load=first)
        self.lists = ListLoader(admit, table, before_first_load=first)
