"""Per-request DataLoaders: every read of a resolver goes through one of these.

The entity loader collects the ids asked for in one stretch of the event loop, of every
kind, into one GetItem or BatchGetItem calls; the list loader collects every list page asked
for and runs their single-partition Queries concurrently. Each batch returns only when all of
its calls are done, so the next level's loads all start together and batch together again:
one wave of DynamoDB calls per nesting level, however many parents (execution/batch_loader.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, cast

from datastore import applications, audit, by_id, departments, employees, jobs
from datastore.by_id import Kind
from datastore.entities import Application, AuditEvent, Department, Employee, JobPosting, Organization, Subscription
from datastore.ids import DepartmentId, EmployeeId, JobId
from datastore.pagination import Page, PageRequest, StartKey
from datastore.table import Table
from graphql_api.execution.batch_loader import SharedLoader
from graphql_api.execution.fields import Deferred

P = ParamSpec("P")
R = TypeVar("R")
K = TypeVar("K")
V = TypeVar("V")

Runner = Callable[..., Awaitable[Any]]
"""Runs a blocking function off the event loop: ``await run(fn, *args)``."""

ListFetch = Callable[[Table, str | None, PageRequest], Page[Any]]


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
    """A DataLoader whose batch runs one blocking datastore call off the loop."""

    def __init__(
        self,
        run: Runner,
        batch: Callable[[list[K]], Sequence[V]],
        *,
        before_first_load: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(before_first_load=before_first_load)
        self._run = run
        self._batch = batch

    async def fetch(self, keys: list[K]) -> list[V]:
        return list(await self._run(self._batch, keys))


class EntityLoader(SharedLoader[tuple[Kind, Any], Any]):
    """Every entity read by id of one loop turn, whatever its kind, in one batch.

    One key is a GetItem, more go whole to ``datastore.by_id`` in one hop to the I/O pool,
    which cuts them into BatchGetItem calls of at most 100 keys (``Table.batch_get``). The
    caller check's organisation and employee thus share a call with the query's own reads.
    """

    def __init__(self, run: Runner, table: Table, *, before_first_load: Callable[[], None] | None = None) -> None:
        super().__init__(before_first_load=before_first_load)
        self._run = run
        self._table = table

    async def fetch(self, keys: list[tuple[Kind, Any]]) -> list[Any]:
        return list(await self._run(by_id.get_by_id, self._table, keys))


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
        return self._loader.deferred((self._kind, key), cast(Callable[[Any], R], then))

    async def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        kind = self._kind
        found = await self._loader.get_many((kind, key) for key in keys)
        return {key: value for (_, key), value in found.items()}


class ListLoader(SharedLoader[ListKey, Page[Any]]):
    """Pages of lists; the Queries of one batch run concurrently and finish together."""

    def __init__(self, run: Runner, table: Table, *, before_first_load: Callable[[], None] | None = None) -> None:
        super().__init__(before_first_load=before_first_load)
        self._run = run
        self._table = table

    async def fetch(self, keys: list[ListKey]) -> list[Page[Any]]:
        return list(
            await asyncio.gather(*(self._run(key.fetch, self._table, key.parent, key.request()) for key in keys))
        )

    async def page(self, key: ListKey) -> Page[Any]:
        return await self.get(key)


# --- list fetchers: (table, parent id, page request) -> page ----------------------------------


def departments_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[Department]:
    return departments.list_departments(table, request)


def employees_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[Employee]:
    return employees.list_employees(table, request)


def employees_by_name(table: Table, prefix: str | None, request: PageRequest) -> Page[Employee]:
    assert prefix is not None
    return employees.list_employees_by_name(table, prefix, request)


def employees_of_department(table: Table, dept_id: str | None, request: PageRequest) -> Page[Employee]:
    assert dept_id is not None  # a department's own id (the list's parent)
    return employees.list_department_employees(table, DepartmentId(dept_id), request)


def open_jobs_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[JobPosting]:
    return jobs.list_open_jobs(table, request)


def jobs_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[JobPosting]:
    return jobs.list_jobs(table, request)


def applications_of_job(table: Table, job_id: str | None, request: PageRequest) -> Page[Application]:
    assert job_id is not None  # a job's own id (the list's parent)
    return applications.list_job_applications(table, JobId(job_id), request)


def applications_of_employee(table: Table, emp_id: str | None, request: PageRequest) -> Page[Application]:
    assert emp_id is not None  # an employee's own id (the list's parent)
    return applications.list_employee_applications(table, EmployeeId(emp_id), request)


def audit_events_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[AuditEvent]:
    """Newest first, whatever ``request.descending`` says."""
    return audit.list_audit_events(table, request)


class Loaders:
    """The DataLoaders of one request, for one tenant. Never shared between requests.

    Each of them calls ``before_first_load`` just before its first load (the session's,
    ``tenant_reached``, acts on the first call of the request only).
    """

    def __init__(self, table: Table, run: Runner, *, before_first_load: Callable[[], None] | None = None) -> None:
        self.table = table
        first = before_first_load
        self.entities = EntityLoader(run, table, before_first_load=first)
        self.organization: Entities[str, Organization | None] = Entities(self.entities, Kind.ORGANIZATION)
        self.subscription: Entities[str, Subscription | None] = Entities(self.entities, Kind.SUBSCRIPTION)
        self.employee: Entities[str, Employee | None] = Entities(self.entities, Kind.EMPLOYEE)
        self.department: Entities[str, Department | None] = Entities(self.entities, Kind.DEPARTMENT)
        self.job: Entities[str, JobPosting | None] = Entities(self.entities, Kind.JOB)
        self.application: Entities[tuple[str, str], Application | None] = Entities(self.entities, Kind.APPLICATION)
        self.employee_id_by_email: Loader[str, str | None] = Loader(
            run,
            lambda emails: [employees.find_employee_id_by_email(table, e) for e in emails],
            before_first_load=first,
        )
        self.lists = ListLoader(run, table, before_first_load=first)
