"""Per-request DataLoaders: every read of a resolver goes through one of these.

Entity loaders collect the ids asked for in one event-loop turn into BatchGetItem calls;
the list loader collects every list page asked for and runs their single-partition Queries
concurrently. Each batch returns only when all of its calls are done, so the next level's
loads all start in one turn and batch together again: one wave of DynamoDB calls per
nesting level, however many parents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from aiodataloader import DataLoader

from datastore import applications, audit, calls, departments, employees, jobs, organizations
from datastore.entities import Application, AuditEvent, Department, Employee, JobPosting
from datastore.organizations import OrganizationWithSubscription
from datastore.pagination import Page, PageRequest, StartKey
from datastore.table import Table

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


class Loader(DataLoader[K, V]):
    """A DataLoader whose batch runs one blocking datastore call off the loop.

    A batch of one key uses ``one`` (a GetItem) when given; a larger batch goes whole to
    ``batch`` in one hop to the I/O pool. Cutting it into BatchGetItem calls of at most 100
    keys, and running those concurrently, is the datastore's job (``Table.batch_get``),
    which records them in this batch's context.
    """

    def __init__(
        self,
        run: Runner,
        batch: Callable[[list[K]], Sequence[V]],
        one: Callable[[K], V] | None = None,
    ) -> None:
        super().__init__()
        self._run = run
        self._batch = batch
        self._one = one

    async def batch_load_fn(self, keys: list[K]) -> list[V]:
        calls.new_batch()
        if len(keys) == 1 and self._one is not None:
            return [await self._run(self._one, keys[0])]
        return list(await self._run(self._batch, keys))

    async def get(self, key: K) -> V:
        return await self.load(key)

    async def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """Each distinct key of ``keys`` once, batched with every other load of this turn.

        For a whole page at once (types/relations.py): one future per distinct key rather
        than a coroutine, a future and a task per object.
        """
        distinct = list(dict.fromkeys(keys))
        return dict(zip(distinct, await self.load_many(distinct), strict=True))


class ListLoader(DataLoader[ListKey, Page[Any]]):
    """Pages of lists; the Queries of one batch run concurrently and finish together."""

    def __init__(self, run: Runner, table: Table) -> None:
        super().__init__()
        self._run = run
        self._table = table

    async def batch_load_fn(self, keys: list[ListKey]) -> list[Page[Any]]:
        calls.new_batch()
        return list(
            await asyncio.gather(*(self._run(key.fetch, self._table, key.parent, key.request()) for key in keys))
        )

    async def page(self, key: ListKey) -> Page[Any]:
        return await self.load(key)


# --- list fetchers: (table, parent id, page request) -> page ----------------------------------


def departments_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[Department]:
    return departments.list_departments(table, request)


def employees_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[Employee]:
    return employees.list_employees(table, request)


def employees_by_name(table: Table, prefix: str | None, request: PageRequest) -> Page[Employee]:
    assert prefix is not None
    return employees.list_employees_by_name(table, prefix, request)


def employees_of_department(table: Table, dept_id: str | None, request: PageRequest) -> Page[Employee]:
    assert dept_id is not None
    return employees.list_department_employees(table, dept_id, request)


def open_jobs_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[JobPosting]:
    return jobs.list_open_jobs(table, request)


def jobs_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[JobPosting]:
    return jobs.list_jobs(table, request)


def applications_of_job(table: Table, job_id: str | None, request: PageRequest) -> Page[Application]:
    assert job_id is not None
    return applications.list_job_applications(table, job_id, request)


def applications_of_employee(table: Table, emp_id: str | None, request: PageRequest) -> Page[Application]:
    assert emp_id is not None
    return applications.list_employee_applications(table, emp_id, request)


def audit_events_of_org(table: Table, _parent: str | None, request: PageRequest) -> Page[AuditEvent]:
    """Newest first, whatever ``request.descending`` says."""
    return audit.list_audit_events(table, request)


class Loaders:
    """The DataLoaders of one request, for one tenant. Never shared between requests."""

    def __init__(self, table: Table, run: Runner) -> None:
        self.table = table
        self.employee: Loader[str, Employee | None] = Loader(
            run,
            lambda ids: employees.get_employees(table, ids),
            lambda emp_id: employees.get_employee(table, emp_id),
        )
        self.department: Loader[str, Department | None] = Loader(
            run,
            lambda ids: departments.get_departments(table, ids),
            lambda dept_id: departments.get_department(table, dept_id),
        )
        self.job: Loader[str, JobPosting | None] = Loader(
            run,
            lambda ids: jobs.get_jobs(table, ids),
            lambda job_id: jobs.get_job(table, job_id),
        )
        self.application: Loader[tuple[str, str], Application | None] = Loader(
            run,
            lambda ids: applications.get_applications(table, ids),
            lambda key: applications.get_application(table, *key),
        )
        self.employee_id_by_email: Loader[str, str | None] = Loader(
            run,
            lambda emails: [employees.find_employee_id_by_email(table, e) for e in emails],
        )
        self.organization: Loader[str, OrganizationWithSubscription | None] = Loader(
            run,
            lambda keys: [organizations.get_organization_with_subscription(table)] * len(keys),
        )
        self.lists = ListLoader(run, table)
