"""The root Query type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import strawberry

from datastore import organizations
from datastore.pagination import PageRequest
from graphql_api import ids, permissions
from graphql_api.context import RequestContext
from graphql_api.cursors import CursorCodec
from graphql_api.types.application import Application
from graphql_api.types.connection import DEFAULT_PAGE_SIZE, After, Connection, First, check_first, to_connection
from graphql_api.types.department import Department
from graphql_api.types.employee import Employee
from graphql_api.types.job_posting import JobPosting
from graphql_api.types.node import Node
from graphql_api.types.organization import BillingSubscription, Organization

Info = strawberry.Info[RequestContext, None]

NodeId = Annotated[
    strawberry.ID,
    strawberry.argument(
        description="A global id as read from an object's `id`. Not an id at all: BAD_USER_INPUT; an id "
        "of another type or organisation, or of nothing: null."
    ),
]

# Cursors of the platform's organisation list belong to no tenant.
PLATFORM_CURSOR_SCOPE = "platform"


async def _employee(info: Info, emp_id: str) -> Employee | None:
    found = await info.context.session.loaders.employee.get(emp_id)
    return None if found is None else Employee.of(found)


async def _department(info: Info, dept_id: str) -> Department | None:
    found = await info.context.session.loaders.department.get(dept_id)
    return None if found is None else Department.of(found)


async def _job(info: Info, job_id: str) -> JobPosting | None:
    found = await info.context.session.loaders.job.get(job_id)
    if found is None:
        return None
    permissions.check_job(info.context, found.status)
    return JobPosting.of(found)


async def _application(info: Info, job_id: str, app_id: str) -> Application | None:
    found = await info.context.session.loaders.application.get((job_id, app_id))
    if found is None:
        return None
    await permissions.check_application(info.context, found.emp_id, found.job_id)
    return Application.of(found)


def _organization(info: Info) -> Organization:
    return Organization.of_caller(info.context.session.require_tenant().org_id)


# What ``node`` reads for an id of each type with that many parts (the id's ULIDs, in order).
_NODE_HANDLERS: dict[tuple[str, int], Callable[..., Awaitable[Node | None]]] = {
    ("Employee", 1): _employee,
    ("Department", 1): _department,
    ("JobPosting", 1): _job,
    ("Application", 2): _application,
}


@strawberry.type(
    description="What a client reads. Every field but `organizations` needs an employee's bearer token or an "
    "API key (none: UNAUTHENTICATED; a platform operator's token: FORBIDDEN) and reads the caller's own "
    "organisation only."
)
class Query:
    @strawberry.field(
        description="The signed-in employee (the token's subject); null for an API key, which is no employee."
    )
    async def me(self, info: Info) -> Employee | None:
        scope = info.context.session.require_tenant()
        principal = info.context.principal
        if principal is not None and principal.api_key:
            return None
        return await _employee(info, scope.actor_id or "")

    @strawberry.field(description="The signed-in employee's organisation, the entry point to its lists.")
    async def organization(self, info: Info) -> Organization | None:
        return _organization(info)

    @strawberry.field(
        description="Any object of your organisation by its global id (Relay's refetch); null when the id "
        "names nothing you can see. Role rules apply as on the type's own field."
    )
    async def node(self, info: Info, id: NodeId) -> Node | None:
        decoded = ids.decode(id)
        tenant = info.context.session.require_tenant()
        if decoded.type_name in ("Organization", "Subscription"):
            if ids.ulids_of(decoded, decoded.type_name, 1) != (tenant.org_id,):
                return None
            if decoded.type_name == "Organization":
                return _organization(info)
            found = await info.context.session.loaders.subscription.get(decoded.parts[0])
            return None if found is None else BillingSubscription.of(found)
        handler = _NODE_HANDLERS.get((decoded.type_name, len(decoded.parts)))
        if handler is None:
            return None
        parts = ids.ulids_of(decoded, decoded.type_name, len(decoded.parts))
        return None if parts is None else await handler(info, *parts)

    @strawberry.field(description="An employee of your organisation by id; null when there is none.")
    async def employee(self, info: Info, id: NodeId) -> Employee | None:
        parts = ids.parts_of(id, "Employee", 1)
        info.context.session.require_tenant()
        return None if parts is None else await _employee(info, parts[0])

    @strawberry.field(
        description="An employee of your organisation by email address; null when none has it (including "
        "someone in another organisation)."
    )
    async def employee_by_email(
        self,
        info: Info,
        email: Annotated[
            str,
            strawberry.argument(
                description="The address to look up, in any letter case; text that is not an email address "
                "is BAD_USER_INPUT."
            ),
        ],
    ) -> Employee | None:
        emp_id = await info.context.session.loaders.employee_id_by_email.get(email)
        return None if emp_id is None else await _employee(info, emp_id)

    @strawberry.field(description="A department of your organisation by id; null when there is none.")
    async def department(self, info: Info, id: NodeId) -> Department | None:
        parts = ids.parts_of(id, "Department", 1)
        info.context.session.require_tenant()
        return None if parts is None else await _department(info, parts[0])

    @strawberry.field(
        description="A job posting by id; null when there is none. An employee reading one that is not "
        "OPEN gets FORBIDDEN."
    )
    async def job_posting(self, info: Info, id: NodeId) -> JobPosting | None:
        parts = ids.parts_of(id, "JobPosting", 1)
        info.context.session.require_tenant()
        return None if parts is None else await _job(info, parts[0])

    @strawberry.field(
        description="An application by id; null when there is none. FORBIDDEN unless it is your own, you "
        "manage the job's department, or you are an admin."
    )
    async def application(self, info: Info, id: NodeId) -> Application | None:
        parts = ids.parts_of(id, "Application", 2)
        info.context.session.require_tenant()
        return None if parts is None else await _application(info, parts[0], parts[1])

    @strawberry.field(
        description="Every organisation on the platform, by name in character-code order (upper case "
        "before lower case). Platform operators' tokens only; anyone else gets FORBIDDEN."
    )
    async def organizations(
        self, info: Info, first: First = DEFAULT_PAGE_SIZE, after: After = None
    ) -> Connection[Organization]:
        context = info.context
        table = context.session.platform_table()
        check_first(first)
        codec: CursorCodec = context.session.services.cursors
        name = "Query.organizations"
        start = None if after is None else codec.decode(after, PLATFORM_CURSOR_SCOPE, name)
        page = await context.session.run(organizations.list_organizations, table, PageRequest(first=first, after=start))
        context.session.response_budget.charge(page.items)
        return to_connection(page, Organization.of, codec, PLATFORM_CURSOR_SCOPE, name, start)


__all__ = ["BillingSubscription", "Query"]
