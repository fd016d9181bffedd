"""One batch of bulk-onboarding rows, run with bounded concurrency: importEmployees and ``server.py import``.

Both callers hand their rows here, so a row means the same thing over the API and from a
CSV file (the row semantics themselves live in datastore/tenants/onboarding.py). A batch:

1. checks every row's fields and refuses a repeated email (no call for either);
2. looks up the employees the remaining emails already name (two BatchGetItem calls);
3. runs each remaining row as its own transaction, ``ROW_CONCURRENCY`` at a time.

Each row's failure is its own result (a code, the row's field and a message), never the
batch's: the other rows go on. Errors name the row's fields as the CSV header and the
mutation's row input do (``email``, ``departmentId``; ``ROW_FIELDS`` places the datastore's
fields there); the mutation places them as ``input.rows.<i>.<field>``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from datastore.errors import Conflict, DatastoreError, Field, InvalidInput
from datastore.kinds.entities import Employee
from datastore.table.scoped import Table
from datastore.tenants import onboarding
from datastore.tenants.onboarding import MAX_ROWS, Imported, Outcome, Row
from datastore.values.ids import DepartmentId
from graphql_api.execution import ids
from graphql_api.execution.errors import INPUT, ApiError, Code, translate

__all__ = ["MAX_ROWS", "ROW_FIELDS", "Outcome", "Row", "RowError", "RowInput", "RowResult", "import_rows"]

# Datastore field -> the row's field that carries it (the CSV column, the row input's field);
# one the row does not carry names the row as a whole.
ROW_FIELDS: Final[Mapping[Field, str]] = {
    "email": "email",
    "first_name": "firstName",
    "last_name": "lastName",
    "role": "role",
    "department_id": "departmentId",
}

# Rows of one batch in flight at once: enough to hide each transaction's round trip, few
# enough that one import leaves the shared connection pool (DYNAMODB_POOL_SIZE) to other requests.
ROW_CONCURRENCY: Final = 16

# Awaits a datastore call, once admitted (RequestSession.run; the CLI's awaits it as it is).
Runner = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]


# A row as a client sends it: ``department_id`` is the department's global id. Made as a plain
# ``Row(...)`` (a subscripted generic cannot construct a frozen dataclass); the type says which.
RowInput = Row[str]


@dataclass(frozen=True, slots=True)
class RowError:
    code: str
    # The row's field at fault (``email``, ``departmentId``, ...); None for the row as a whole.
    field: str | None
    message: str


@dataclass(frozen=True, slots=True)
class RowResult:
    """CREATED or UNCHANGED with the employee, or an error."""

    outcome: Outcome | None = None
    employee: Employee | None = None
    error: RowError | None = None


def row_error(error: BaseException) -> RowError | None:
    """The row-level form of an expected error; None for a bug (which then fails the request)."""
    translated = translate(error, ROW_FIELDS)
    if translated is None:
        return None
    placed = translated.extensions.get("field")
    field = placed if isinstance(placed, str) and placed != INPUT else None
    reason = str(translated).removeprefix(f"{placed}: ") if isinstance(placed, str) else str(translated)
    if isinstance(error, Conflict):
        field = "email"  # the row's key: its email names an employee with other data
    return RowError(translated.code.value, field, reason)


def _datastore_row(row: RowInput) -> Row[DepartmentId]:
    """The datastore's row, validated; a department id of no department is InvalidInput."""
    department_id = None
    if row.department_id is not None:
        department_id = ids.DEPARTMENT.parse(row.department_id, ROW_FIELDS["department_id"])
        if department_id is None:
            raise InvalidInput("department_id", "no such department")
    return onboarding.validated(
        Row(row.email, row.first_name, row.last_name, row.role, department_id, row.hired_at),
    )


async def import_rows(
    table: Table,
    rows: Sequence[RowInput],
    *,
    read: Runner,
    write: Runner,
    concurrency: int = ROW_CONCURRENCY,
) -> list[RowResult]:
    """One result per row, in order.

    The caller keeps batches to MAX_ROWS (limits/bulk_rows.py; the CLI's batches).
    """
    results: list[RowResult | None] = [None] * len(rows)
    ready: dict[int, Row[DepartmentId]] = {}
    for index, given in enumerate(rows):
        try:
            ready[index] = _datastore_row(given)
        except (ApiError, DatastoreError) as error:
            results[index] = _failed(error)
    first = onboarding.first_rows(list(ready.values()))
    order = list(ready)
    for position, index in enumerate(order):
        if position != first[ready[index].email]:
            del ready[index]
            results[index] = RowResult(
                error=RowError(Code.BAD_USER_INPUT.value, "email", "repeats the email of an earlier row")
            )
    known: dict[str, Employee] = {}
    try:
        if ready:  # a batch of invalid rows only makes no call at all
            known = await read(lambda: onboarding.existing(table, [row.email for row in ready.values()]))
    except (ApiError, DatastoreError) as error:
        for index in ready:
            results[index] = _failed(error)
        ready = {}

    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, row: Row[DepartmentId]) -> None:
        current = known.get(row.email)
        try:
            if current is not None:
                # Known already: compared in memory, no call and no write.
                done: Imported = await onboarding.import_row(table, row, current)
            else:
                async with gate:
                    done = await write(lambda: onboarding.import_row(table, row, None))
        except (ApiError, DatastoreError) as error:
            results[index] = _failed(error)
        else:
            results[index] = RowResult(outcome=done.outcome, employee=done.employee)

    await asyncio.gather(*(one(index, row) for index, row in ready.items()))
    finished = [result for result in results if result is not None]
    if len(finished) != len(rows):
        raise AssertionError("a row without a result")
    return finished


def _failed(error: ApiError | DatastoreError) -> RowResult:
    found = row_error(error)
    if found is None:
        raise error
    return RowResult(error=found)
