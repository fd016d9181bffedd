"""What one GraphQL request carries: its caller, its tenant scope, its loaders and its cost."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from datastore.calls import CallLog
from datastore.scope import PlatformScope, TenantScope
from datastore.store import Datastore
from datastore.table import Table
from graphql_api.auth import Principal
from graphql_api.config import ApiSettings
from graphql_api.cursors import CursorCodec
from graphql_api.errors import forbidden, unauthenticated
from graphql_api.limits.call_budget import CallBudget
from graphql_api.limits.response_size import ResponseBudget
from graphql_api.loaders import Loaders

T = TypeVar("T")


@dataclass
class Services:
    """Process-wide parts, built once at start-up and shared by every request."""

    settings: ApiSettings
    datastore: Datastore
    executor: Executor
    cursors: CursorCodec


@dataclass
class RequestContext:
    request: Request
    response: Response
    services: Services
    request_id: str
    principal: Principal | None
    call_log: CallLog = field(default_factory=CallLog)
    started: float = field(default_factory=time.perf_counter)
    _loaders: Loaders | None = None
    _budget: CallBudget | None = None
    _response_budget: ResponseBudget | None = None
    # Called once, when the request first reaches for tenant data (graphql_api/active.py).
    on_first_tenant_access: Callable[[], None] | None = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking (boto3) call on the I/O pool, never on the event loop.

        The context is copied so the call is recorded in this request's CallLog and batch.
        """
        if self._budget is None:
            self._budget = CallBudget(self.services.settings.max_dynamodb_calls)
        self._budget.charge(self.call_log)
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.services.executor, functools.partial(context.run, fn, *args))

    @property
    def response_budget(self) -> ResponseBudget:
        """Bytes of list pages this response has built so far (limits/response_size.py)."""
        if self._response_budget is None:
            self._response_budget = ResponseBudget(self.services.settings.max_response_bytes)
        return self._response_budget

    def require_tenant(self) -> TenantScope:
        """The caller's tenant scope; UNAUTHENTICATED without a token."""
        principal = self.principal
        if principal is None:
            raise unauthenticated()
        if principal.org_id is None:
            raise forbidden("platform operators see no tenant data")
        return TenantScope(principal.org_id, principal.subject)

    @property
    def loaders(self) -> Loaders:
        """The tenant's loaders; UNAUTHENTICATED without a token."""
        if self._loaders is None:
            table = self.services.datastore.table(self.require_tenant())
            self._loaders = Loaders(table, self.run)
            if self.on_first_tenant_access is not None:
                self.on_first_tenant_access()
        return self._loaders

    def platform_table(self) -> Table:
        principal = self.principal
        if principal is None:
            raise unauthenticated()
        if not principal.is_platform:
            raise forbidden("only platform operators may do this")
        return self.services.datastore.table(PlatformScope())

    def tenant_table(self) -> Table:
        return self.loaders.table
