"""One request's session: everything a GraphQL request owns while it runs.

Made by the request's lifetime (request/lifetime.py), which ends it. Its tenant Table (one
for the request, under its deadline) and the loaders reading through it, the admission of
every other datastore call (writes, and reads outside the loaders: ``run``), all awaited on
the event loop, the call budget, the deadline, cancellation, and the moment the request
first reaches for tenant data, which starts the caller's active check. Limits that
act per request (the deadline today; per-tenant rate limits and concurrency caps later)
hang off this one object, so a resolver never needs to know about them: it asks the session
for its loaders or runs a call through it, and the session refuses what may not be done.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

from datastore.aws.calls import CallLog
from datastore.kinds.entities import Organization
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope, TenantScope
from graphql_api.execution.charge import BucketStatus
from graphql_api.execution.errors import ApiError, forbidden, timeout, token_missing
from graphql_api.execution.loaders import Loaders
from graphql_api.limits.call_budget import CallBudget
from graphql_api.limits.response_size import ResponseBudget
from graphql_api.limits.tenant_rate import bucket_after, rate_limited
from graphql_api.request.principal import Principal
from graphql_api.request.services import Services

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Deadline:
    """When a request must have ended, on the monotonic clock (readable from any thread)."""

    at: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def passed(self) -> bool:
        return self.remaining() <= 0


@dataclass
class RequestSession:
    services: Services
    principal: Principal | None
    deadline: Deadline
    call_log: CallLog = field(default_factory=CallLog)
    started: float = field(default_factory=time.perf_counter)
    # Set when the client went away or the deadline passed: nothing more is sent.
    cancelled: bool = False
    # A write was handed to DynamoDB: if the request now fails, it may have been applied.
    write_dispatched: bool = False
    _budget: CallBudget | None = None
    _response_budget: ResponseBudget | None = None
    _loaders: Loaders | None = None
    _tenant_table: Table | None = None
    _platform_table: Table | None = None
    # The caller's tenant scope and the principal it was made for (require_tenant).
    _tenant: tuple[Principal, TenantScope] | None = None
    # The caller's organisation as the active check read it (auth/active.py).
    _organization: Organization | None = None
    _reached: bool = False
    _on_tenant_reached: list[Callable[[], None]] = field(default_factory=list)

    @property
    def response_budget(self) -> ResponseBudget:
        """Bytes of list pages this response has built so far (limits/response_size.py)."""
        if self._response_budget is None:
            self._response_budget = ResponseBudget(self.services.settings.max_response_bytes)
        return self._response_budget

    # --- admission ------------------------------------------------------------------------

    def admit(self, cost: float) -> BucketStatus | None:
        """Admit a request of ``cost`` (execution/query_cost.py units) before anything runs: the
        bucket after it, or None for a caller who draws on none.

        TIMEOUT once the deadline has passed; RATE_LIMITED when the caller's organisation
        cannot pay ``cost`` from its bucket (limits/tenant_rate.py), which is then left
        untouched. Platform operators and anonymous callers draw on no bucket.
        """
        self.check()
        buckets = self.services.tenant_buckets
        principal = self.principal
        if buckets is None or principal is None or principal.org_id is None:
            return None
        admission = buckets.charge(principal.org_id, cost)
        bucket = bucket_after(buckets, admission)
        if not admission.admitted:
            raise rate_limited(admission.retry_after, cost, bucket)
        return bucket

    def check(self) -> None:
        """TIMEOUT once the deadline has passed; nothing may be sent after that."""
        if self.cancelled or self.deadline.passed():
            self.cancelled = True
            raise self.timeout_error()

    def timeout_error(self) -> ApiError:
        return timeout(self.deadline.seconds, maybe_written=self.write_dispatched)

    # --- datastore calls ------------------------------------------------------------------

    def admit_call(self) -> None:
        """A DynamoDB call is about to be sent: refused past the deadline (TIMEOUT) or over the
        request's call budget. The loaders call it before each call they send."""
        self.check()
        if self._budget is None:
            self._budget = CallBudget(self.services.settings.max_dynamodb_calls)
        self._budget.charge(self.call_log)

    async def run(self, fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        """Await a datastore call made outside the loaders, once the session admits it.

        Refused past the deadline or over the call budget before anything is sent. It runs
        in the request's task, so it is recorded in this request's CallLog, and the
        deadline's cancellation (request/lifetime.py) or a disconnect cancels it.
        """
        self.admit_call()
        return await fn(*args, **kwargs)

    async def run_write(self, fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        """``run`` for a write: once it is sent, a failure may leave it applied."""
        self.check()
        self.write_dispatched = True
        return await self.run(fn, *args, **kwargs)

    # --- tenant data ----------------------------------------------------------------------

    def require_tenant(self) -> TenantScope:
        """The caller's tenant scope; UNAUTHENTICATED without a token.

        Made once a request: ``node`` asks for it for every id it is given (Q4 names 100), and
        a scope builds its key space when it is made.
        """
        principal = self.principal
        made = self._tenant
        if made is not None and made[0] is principal:
            return made[1]
        if principal is None:
            raise token_missing()
        if principal.org_id is None:
            raise forbidden("platform operators see no tenant data")
        scope = TenantScope(principal.org_id, principal.subject)
        self._tenant = (principal, scope)
        return scope

    @property
    def loaders(self) -> Loaders:
        """The tenant's loaders, made on first use (no call is made here); UNAUTHENTICATED without
        a token. Before their first load they call ``tenant_reached``."""
        if self._loaders is None:
            self._loaders = Loaders(self._table(), self.admit_call, before_first_load=self.tenant_reached)
        return self._loaders

    def _table(self) -> Table:
        """The tenant's table, made once per request (no call is made here): the loaders' and
        every other call's, none of them retried past the request's deadline."""
        if self._tenant_table is None:
            self._tenant_table = self.services.datastore.table(self.require_tenant(), deadline=self.deadline.at)
            if self._organization is not None:
                self._tenant_table.retention.know(self._organization)
        return self._tenant_table

    def organization_checked(self, organization: Organization) -> None:
        """The active check read the caller's organisation: the request's writes stamp their
        audit events with its retention without reading it again (datastore/table/retention.py)."""
        self._organization = organization
        if self._tenant_table is not None:
            self._tenant_table.retention.know(organization)

    def end(self) -> None:
        """The request is over: let go of its loaders and everything they loaded.

        The loaders check their calls with ``self.admit_call``, so they and the session hold each
        other: a cycle, which only the cyclic garbage collector would free, together with
        every entity and page the request read (1,000 employees on the directory query),
        and a collection that walks them stalls every request in flight.
        """
        self._loaders = None
        self._on_tenant_reached.clear()

    def tenant_reached(self) -> None:
        """The request's first read of tenant data is being made: start what waits for it.

        Called by the loaders just before their first load, and by ``tenant_table``. The
        caller's active check starts here (graphql_api/auth/active.py), so its reads are queued
        in the same batch as that first load.
        """
        if self._reached:
            return
        self._reached = True
        callbacks, self._on_tenant_reached = self._on_tenant_reached, []
        for callback in callbacks:
            callback()

    def when_tenant_reached(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when the request first reaches for tenant data (now if it has).

        Returns the function that withdraws it.
        """
        if self._reached:
            callback()
            return lambda: None
        self._on_tenant_reached.append(callback)
        return lambda: self._on_tenant_reached.remove(callback) if callback in self._on_tenant_reached else None

    def tenant_table(self) -> Table:
        """The tenant's table, for a call made without a loader (a mutation's write)."""
        table = self._table()
        self.tenant_reached()
        return table

    def platform_table(self) -> Table:
        principal = self.principal
        if principal is None:
            raise token_missing()
        if not principal.is_platform:
            raise forbidden("only platform operators may do this")
        if self._platform_table is None:
            self._platform_table = self.services.datastore.table(PlatformScope(), deadline=self.deadline.at)
        return self._platform_table
