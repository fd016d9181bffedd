"""The root Query type."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import strawberry

from datastore.kinds import entities
from datastore.table.pagination import PageRequest
from datastore.tenants import organizations
from graphql_api.execution import ids
from graphql_api.execution.fields import Deferred, loaded
from graphql_api.request.context import RequestContext
from graphql_api.request.cursors import CursorCodec
from graphql_api.schema import permissions
from graphql_api.schema.types.application import Application
from graphql_api.schema.types.connection import DEFAULT_PAGE_SIZE, After, Connection, First, check_first, to_connection
from graphql_api.schema.types.department import Department
from graphql_api.schema.types.employee import Employee
from graphql_api.schema.types.job_posting import JobPosting
from graphql_api.schema.types.node import Node
from graphql_api.schema.types.organization import BillingSubscription, Organization

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


# A root field by id is one synchronous function, ``load(context, arguments)``: it checks the
# id and the caller and gives the object, None, a Deferred (an entity loader's key, which a
# compiled plan waits on a batch at a time) or, where a role rule waits on a read of its own,
# a coroutine. The field is declared by its load alone (execution/fields.py ``loaded``):
# compiled plans call the load directly, and the resolver graphql-core calls is made from it.


def _employee_of(found: entities.Employee | None) -> Employee | None:
    return None if found is None else Employee.of(found)


def _department_of(found: entities.Department | None) -> Department | None:
    return None if found is None else Department.of(found)


def _subscription_of(found: entities.Subscription | None) -> BillingSubscription | None:
    return None if found is None else BillingSubscription.of(found)


def _visible_job(context: RequestContext, found: entities.JobPosting | None) -> JobPosting | None:
    if found is None:
        return None
    permissions.check_job(context, found.status)
    return JobPosting.of(found)


def _employee(context: RequestContext, emp_id: str) -> Deferred[Employee | None]:
    return context.loaders.employee.deferred(emp_id, _employee_of)


def _department(context: RequestContext, dept_id: str) -> Deferred[Department | None]:
    return context.loaders.department.deferred(dept_id, _department_of)


def _job(context: RequestContext, job_id: str) -> Deferred[JobPosting | None]:
    return context.loaders.job.deferred(job_id, functools.partial(_visible_job, context))


async def _application(context: RequestContext, job_id: str, app_id: str) -> Application | None:
    found = await context.loaders.application.get((job_id, app_id))
    if found is None:
        return None
    await permissions.check_application(context, found.emp_id, found.job_id)
    return Application.of(found)


def _organization(context: RequestContext) -> Organization:
    return Organization.of_caller(context.session.require_tenant().org_id)


# What ``node`` reads for an id of each type with that many parts (the id's ULIDs, in order).
_NODE_HANDLERS: dict[tuple[str, int], Callable[..., Any]] = {
    ("Employee", 1): _employee,
    ("Department", 1): _department,
    ("JobPosting", 1): _job,
    ("Application", 2): _application,
}

Loaded = Any
"""What a load gives: the object, None, a Deferred or a coroutine of the object or None."""


def _load_me(context: RequestContext, _arguments: Mapping[str, Any]) -> Loaded:
    scope = context.session.require_tenant()
    principal = context.principal
    if principal is not None and principal.api_key:
        return None
    return _employee(context, scope.actor_id or "")


def _me_id(context: RequestContext, _arguments: Mapping[str, Any]) -> str | None:
    """The id ``me`` will give, known before its read: its fields' reads may go out beside it
    (fields.prefetch). Asked only after ``_load_me`` has given its value."""
    principal = context.principal
    if principal is None or principal.api_key:
        return None
    return context.session.require_tenant().actor_id


def _load_organization(context: RequestContext, _arguments: Mapping[str, Any]) -> Loaded:
    return _organization(context)


def _load_node(context: RequestContext, arguments: Mapping[str, Any]) -> Loaded:
    decoded = ids.decode(arguments["id"])
    tenant = context.session.require_tenant()
    if decoded.type_name in ("Organization", "Subscription"):
        if ids.ulids_of(decoded, decoded.type_name, 1) != (tenant.org_id,):
            return None
        if decoded.type_name == "Organization":
            return _organization(context)
        return context.loaders.subscription.deferred(decoded.parts[0], _subscription_of)
    handler = _NODE_HANDLERS.get((decoded.type_name, len(decoded.parts)))
    if handler is None:
        return None
    parts = ids.ulids_of(decoded, decoded.type_name, len(decoded.parts))
    return None if parts is None else handler(context, *parts)


Load = Callable[[RequestContext, Mapping[str, Any]], Loaded]


def _by_id(type_name: str, count: int, read: Callable[..., Loaded]) -> Load:
    """The load of a type's own root field by id: ``read(context, *the id's ULIDs)``."""

    def load(context: RequestContext, arguments: Mapping[str, Any]) -> Loaded:
        parts = ids.parts_of(arguments["id"], type_name, count)
        context.session.require_tenant()
        return None if parts is None else read(context, *parts)

    return load


_load_employee = _by_id("Employee", 1, _employee)
_load_department = _by_id("Department", 1, _department)
_load_job = _by_id("JobPosting", 1, _job)
_load_application = _by_id("Application", 2, _application)


@strawberry.type(
    description="What a client reads. Every field but `organizations` needs an employee's bearer token or an "
    "API key (none: UNAUTHENTICATED; a platform operator's token: FORBIDDEN) and reads the caller's own "
    "organisation only."
)
class Query:
    me = loaded(
        _load_me,
        known_id=_me_id,
        returns=Employee | None,
        description="The signed-in employee (the token's subject); null for an API key, which is no employee.",
    )
    organization = loaded(
        _load_organization,
        returns=Organization | None,
        description="The signed-in employee's organisation, the entry point to its lists.",
    )
    node = loaded(
        _load_node,
        returns=Node | None,
        description="Any object of your organisation by its global id (Relay's refetch); null when the id "
        "names nothing you can see. Role rules apply as on the type's own field.",
        id=NodeId,
    )
    employee = loaded(
        _load_employee,
        returns=Employee | None,
        description="An employee of your organisation by id; null when there is none.",
        id=NodeId,
    )

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
        emp_id = await info.context.loaders.employee_id_by_email.get(email)
        return None if emp_id is None else await _employee(info.context, emp_id).result()

    department = loaded(
        _load_department,
        returns=Department | None,
        description="A department of your organisation by id; null when there is none.",
        id=NodeId,
    )
    job_posting = loaded(
        _load_job,
        returns=JobPosting | None,
        description="A job posting by id; null when there is none. An employee reading one that is not "
        "OPEN gets FORBIDDEN.",
        id=NodeId,
    )
    application = loaded(
        _load_application,
        returns=Application | None,
        description="An application by id; null when there is none. FORBIDDEN unless it is your own, you "
        "manage the job's department, or you are an admin.",
        id=NodeId,
    )

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
