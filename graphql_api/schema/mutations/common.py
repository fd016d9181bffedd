"""What every mutation shares: role gates, running a datastore write, fresh payload reads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, ParamSpec, TypeVar

import strawberry

from datastore.kinds.entities import Role
from datastore.tenants import departments
from datastore.values.ids import DepartmentId
from graphql_api.execution.errors import forbidden
from graphql_api.request.context import RequestContext
from graphql_api.schema import permissions
from graphql_api.schema.types.department import Department

P = ParamSpec("P")
T = TypeVar("T")

IDEMPOTENCY_KEY_HELP: Final = (
    "A key of your choosing (1 to 128 printable ASCII characters, no spaces; a UUID works). Send the "
    "same key again to retry safely: within 24 hours a retry with the same input returns the first "
    "result and writes nothing; a different input under the key is BAD_USER_INPUT. Omit it for no retry "
    "protection."
)

# The one argument of every mutation.
INPUT_ARGUMENT: Final = strawberry.argument(
    description="Everything the mutation needs, as one object: send it as a single `$input` variable. "
    "Errors about its fields name them as `input.<field>` in `extensions.field`."
)


def require_admin(context: RequestContext) -> None:
    if permissions.caller(context).role is not Role.ADMIN:
        raise forbidden("only admins may do this")


async def run_write(context: RequestContext, write: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
    """Await a datastore write through the request's session, its arguments checked against its signature.

    Its errors name datastore fields; errors.ErrorCodes places them in the mutation's input
    (mutations/input_paths.py).
    """
    return await context.session.run_write(write, *args, **kwargs)


async def fresh_department(context: RequestContext, dept_id: DepartmentId | None) -> Department | None:
    """A department as it is after a write (a strongly consistent read), for payloads.

    Headcounts change with employee writes; the loaders' eventually consistent reads could
    return the count from before.
    """
    if dept_id is None:
        return None
    found = await context.session.run(
        departments.get_department, context.session.tenant_table(), dept_id, consistent=True
    )
    return None if found is None else Department.of(found)
