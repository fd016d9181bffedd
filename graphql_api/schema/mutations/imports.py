"""importEmployees (admins): up to 100 new employees, each row its own transaction.

The rows run through graphql_api/bulk/rows.py, the same batch ``python server.py import`` runs.
Row errors are results, not GraphQL errors: ``extensions``-style ``code`` and ``field``,
the field as ``input.rows.<index>.<field>`` (0-based, the index of ``rows``).
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated

import strawberry

from datastore.tenants.onboarding import MAX_ROWS
from graphql_api.bulk import rows as bulk
from graphql_api.limits import bulk_rows
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import INPUT_ARGUMENT, require_admin
from graphql_api.schema.types.employee import Employee
from graphql_api.schema.types.scalars import Role

Info = strawberry.Info[RequestContext, None]


@strawberry.input(description="One person to onboard. The email is the row's key: importing it again is harmless.")
class ImportEmployeeRow:
    email: str = strawberry.field(
        description="Work email address in one of your organisation's email domains; stored lower-case."
    )
    first_name: str = strawberry.field(description="Given name, 1 to 100 characters.")
    last_name: str = strawberry.field(description="Family name, 1 to 100 characters.")
    role: Role = strawberry.field(default=Role.EMPLOYEE, description="What they may do; EMPLOYEE unless given.")
    department_id: strawberry.ID | None = strawberry.field(
        default=None, description="Global id of the department to join; omit for none."
    )
    hired_at: datetime | None = strawberry.field(
        default=None,
        description="When they were hired; now when omitted (and then not compared when the email exists).",
    )


@strawberry.input(description="The rows of one import.")
class ImportEmployeesInput:
    rows: list[ImportEmployeeRow] = strawberry.field(
        description=f"At most {MAX_ROWS} rows (more is BAD_USER_INPUT and nothing is written); each row is its "
        "own transaction and gets its own result, in the same order."
    )


@strawberry.enum(description="What happened to one row of an import.")
class ImportRowStatus(Enum):
    CREATED = strawberry.enum_value("CREATED", description="A new ACTIVE employee was written.")
    UNCHANGED = strawberry.enum_value(
        "UNCHANGED", description="An ACTIVE employee with this email and the same data exists; nothing was written."
    )
    FAILED = strawberry.enum_value("FAILED", description="Nothing was written for this row; `error` says why.")


@strawberry.type(description="Why a row was not imported.")
class ImportRowError:
    code: str = strawberry.field(
        description="As `extensions.code` of a GraphQL error: BAD_USER_INPUT (an invalid field, an email "
        "repeated in the batch, an email outside your domains, no such department), CONFLICT (the email "
        "belongs to an employee with other data, or to an INACTIVE one), UNAVAILABLE or TIMEOUT (retry "
        "the import: rows are idempotent)."
    )
    field: str = strawberry.field(
        description="The field at fault, as `input.rows.<index>.<field>` (index from 0; a CONFLICT names the "
        "row's key, `email`), or `input.rows.<index>` for the row as a whole (UNAVAILABLE, TIMEOUT)."
    )
    message: str = strawberry.field(description="What is wrong, for a person.")


@strawberry.type(description="The result of one row, at the row's index.")
class ImportEmployeeResult:
    index: int = strawberry.field(description="The row's index in `input.rows`, from 0.")
    status: ImportRowStatus = strawberry.field(description="CREATED, UNCHANGED or FAILED.")
    employee: Employee | None = strawberry.field(
        description="The employee the row created or found unchanged; null when it FAILED."
    )
    error: ImportRowError | None = strawberry.field(description="Why the row FAILED; null otherwise.")


@strawberry.type(description="The result of importEmployees: one result per row, in order, and the totals.")
class ImportEmployeesPayload:
    results: list[ImportEmployeeResult] = strawberry.field(description="One per row, in the order of `input.rows`.")
    created: int = strawberry.field(description="Rows CREATED.")
    unchanged: int = strawberry.field(description="Rows UNCHANGED.")
    failed: int = strawberry.field(description="Rows FAILED.")


def row_input(row: ImportEmployeeRow) -> bulk.RowInput:
    return bulk.Row(
        email=row.email,
        first_name=row.first_name,
        last_name=row.last_name,
        role=row.role,
        department_id=None if row.department_id is None else str(row.department_id),
        hired_at=row.hired_at,
    )


def result_of(index: int, result: bulk.RowResult) -> ImportEmployeeResult:
    if result.error is not None or result.outcome is None or result.employee is None:
        error = result.error
        return ImportEmployeeResult(
            index=index,
            status=ImportRowStatus.FAILED,
            employee=None,
            error=None
            if error is None
            else ImportRowError(
                code=error.code,
                field=f"{bulk_rows.ROWS_FIELD}.{index}" + ("" if error.field is None else f".{error.field}"),
                message=error.message,
            ),
        )
    return ImportEmployeeResult(
        index=index,
        status=ImportRowStatus(result.outcome.value),
        employee=Employee.of(result.employee),
        error=None,
    )


async def import_employees(
    info: Info, input: Annotated[ImportEmployeesInput, INPUT_ARGUMENT]
) -> ImportEmployeesPayload | None:
    context = info.context
    require_admin(context)
    # More than MAX_ROWS never gets here: limits/bulk_rows.py refuses it before execution.
    session = context.session
    outcomes = await bulk.import_rows(
        session.tenant_table(),
        [row_input(row) for row in input.rows],
        read=session.run,
        write=session.run_write,
    )
    results = [result_of(index, outcome) for index, outcome in enumerate(outcomes)]
    return ImportEmployeesPayload(
        results=results,
        created=sum(r.status is ImportRowStatus.CREATED for r in results),
        unchanged=sum(r.status is ImportRowStatus.UNCHANGED for r in results),
        failed=sum(r.status is ImportRowStatus.FAILED for r in results),
    )
