"""A valid token is not enough: the caller's organisation must be active, and so must they.

Checked once per request, after the document limits, through the request's entity loader:
the organisation's item and the employee's are two keys of the same batch as the query's own
first reads by id (one BatchGetItem for all of them). For a query the check starts when a
resolver first reaches for tenant data and runs alongside that first level (no extra round
trip; at most one extra call, none when the query reads the caller by id; none for a query
that reads no tenant data), and a failed check replaces the whole result, so nothing is
returned; a mutation waits for the check before any resolver runs (one extra round trip, one
call), so nothing is written, and so does a query that will store an Apollo persisted query
for the organisation (a write too: http/persisted.py). Both results stay in the loader's
cache, so ``me`` and ``organization`` cost nothing more; the subscription is read only by a
field that shows it. The organisation's item goes on to the request's session, whose writes
stamp their audit events with its retention without reading it again (datastore/table/retention.py).
A token whose role differs from the employee's current role is refused too (it was issued
before a change). An API key has no employee: for a request only its organisation is checked
(the key's own status was checked, strongly consistent, when it was authenticated,
graphql_api/auth/api_keys.py). A live subscription outlives its authentication, so each of its
deliveries (``key_status``) also reads the key's record in the organisation's partition, in the
same batch as the organisation: a revoked key gets nothing more, whichever of the revocation's
stream records (the key's, its audit event's) comes first.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterator

from graphql import GraphQLError
from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from datastore.kinds.entities import (
    ApiKey,
    ApiKeyStatus,
    Employee,
    EmployeeStatus,
    Organization,
    OrganizationStatus,
)
from graphql_api.execution.errors import AuthReason, unauthenticated
from graphql_api.request.context import RequestContext
from graphql_api.request.principal import Principal
from graphql_api.request.session import RequestSession


def check_active(context: RequestContext, *, key_status: bool = False) -> Awaitable[None]:
    """The verdict on the caller; its two reads are queued now, in this turn of the loop.

    Queuing them synchronously puts them in the same loader round as the load that first
    reached for tenant data (a task would queue them a turn later, a round trip apart under
    load), so the check never costs a wave of its own. ``key_status``: an API key's own record
    is read too, with the organisation (a live delivery; a request checked it when it began).
    """
    principal = context.principal
    if principal is None or principal.org_id is None:
        return asyncio.sleep(0)  # anonymous and platform callers reach no tenant data
    session = context.session
    loaders = session.loaders
    organization_read = loaders.organization.load(principal.org_id)
    if principal.api_key:
        if key_status:
            return _key_verdict(session, organization_read, loaders.api_key.load(principal.subject))
        return _organization_verdict(session, organization_read)
    employee_read = loaders.employee.load(principal.subject)
    return _verdict(session, principal, organization_read, employee_read)


async def _organization_verdict(session: RequestSession, organization_read: Awaitable[Organization | None]) -> None:
    _require_active(session, await organization_read)


async def _key_verdict(
    session: RequestSession, organization_read: Awaitable[Organization | None], key_read: Awaitable[ApiKey | None]
) -> None:
    organization, key = await asyncio.gather(organization_read, key_read)
    _require_active(session, organization)
    if key is None or key.status is not ApiKeyStatus.ACTIVE:
        raise unauthenticated("the API key was revoked", AuthReason.TOKEN_INVALID)


def _require_active(session: RequestSession, organization: Organization | None) -> None:
    if organization is None or organization.status is not OrganizationStatus.ACTIVE:
        raise unauthenticated("the organisation is not active", AuthReason.ACCOUNT_INACTIVE)
    # The request's writes stamp their audit events with its retention (datastore/table/retention.py).
    session.organization_checked(organization)


async def _verdict(
    session: RequestSession,
    principal: Principal,
    organization_read: Awaitable[Organization | None],
    employee_read: Awaitable[Employee | None],
) -> None:
    organization, employee = await asyncio.gather(organization_read, employee_read)
    _require_active(session, organization)
    if employee is None or employee.status is not EmployeeStatus.ACTIVE:
        raise unauthenticated("the employee is not active", AuthReason.ACCOUNT_INACTIVE)
    if employee.role is not principal.role:
        raise unauthenticated(
            "the token's role is no longer the employee's role: get a new token", AuthReason.ROLE_CHANGED
        )


def _refusal(error: Exception) -> GraphQLExecutionResult:
    """The whole result replaced by the check's failure, translated (and an outage logged with
    the request id) by the one translation every error goes through (errors.ErrorCodes)."""
    return GraphQLExecutionResult(data=None, errors=[_error(error)])


def _error(error: Exception) -> GraphQLError:
    return GraphQLError(str(error), original_error=error)


class ActiveCaller(SchemaExtension):
    """Runs inside errors.ErrorCodes (listed after it), which codes the refusal it leaves."""

    refused: Exception | None = None

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if self.refused is not None and result is not None:
            result.data = None
            result.errors = [_error(self.refused)]

    async def on_execute(self) -> AsyncIterator[None]:
        execution = self.execution_context
        if execution.result is not None:  # refused by a limit: nothing may be loaded
            yield
            return
        context: RequestContext = execution.context
        if execution.operation_type is not OperationType.QUERY or context.registration is not None:
            try:
                await check_active(context)
            except Exception as error:  # a bug too: ErrorCodes masks it as INTERNAL, logged
                execution.result = _refusal(error)
            yield
            return
        started: list[asyncio.Future[None]] = []

        def start() -> None:
            started.append(asyncio.ensure_future(check_active(context)))

        # At the first load; at once if an earlier operation of a batch made the loaders
        # (then the check is answered from their cache).
        withdraw = context.session.when_tenant_reached(start)
        try:
            yield
        finally:
            withdraw()
            for check in started:
                try:
                    await check
                except Exception as error:  # the result is replaced when the operation ends
                    self.refused = error
