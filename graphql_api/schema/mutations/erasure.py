"""erasePerson (admins): a terminated employee's personal data removed everywhere it is stored."""

from __future__ import annotations

from typing import Annotated

import strawberry

from datastore.lifecycle import erasure
from graphql_api.execution import ids
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import INPUT_ARGUMENT, require_admin, run_write
from graphql_api.schema.types.employee import Employee

Info = strawberry.Info[RequestContext, None]


@strawberry.input(description="The person to erase: a terminated (INACTIVE) employee.")
class ErasePersonInput:
    id: strawberry.ID = strawberry.field(description="The employee's global id.")


@strawberry.type(description="The result of erasePerson.")
class ErasePersonPayload:
    employee: Employee = strawberry.field(
        description="What remains of them: a tombstone whose `email`, `firstName` and `lastName` are empty and "
        "whose `erasedAt` is set; their id, role, status, department and dates stay, so applications, "
        "departments and the audit trail still name them, as an erased person."
    )
    items_touched: int = strawberry.field(
        description="How many items this call changed or deleted (0 when the person was erased already)."
    )
    already_erased: bool = strawberry.field(description="True when the person had been erased before: nothing changed.")


async def erase_person(info: Info, input: Annotated[ErasePersonInput, INPUT_ARGUMENT]) -> ErasePersonPayload | None:
    context = info.context
    require_admin(context)
    emp_id = ids.EMPLOYEE.decode(input.id, "input.id")
    done = await run_write(context, erasure.erase_person, context.session.tenant_table(), emp_id)
    return ErasePersonPayload(
        employee=Employee.of(done.employee), items_touched=len(done.touches), already_erased=done.already
    )
