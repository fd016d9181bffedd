"""``python server.py import``: a CSV file of employees, streamed into batches of bulk rows.

The file is read with the csv module over the open file, one record at a time, and handed
to graphql_api/bulk/rows.py in batches of MAX_ROWS: the same batch importEmployees runs, so a row
means the same thing from a file as over the API. Nothing holds more than one batch.

Columns (header names as the API's input fields, in any order; others are refused):

    email, firstName, lastName       required
    role                             EMPLOYEE (when empty), MANAGER or ADMIN, any case
    departmentId                     the department's global id (``Department.id``); empty for none
    hiredAt                          ISO 8601, e.g. 2026-03-01 or 2026-03-01T09:00:00+01:00 (UTC when
                                     no offset is given); empty for now

A file that is not UTF-8, has no header, lacks a required column or names an unknown one is
a CsvError (the command prints one line and exits with 2). A row that cannot become an
employee is a failed row, reported with its line number, and the others go on.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO, Final

from datastore.kinds.entities import Role
from datastore.table.scoped import Table
from datastore.tenants.onboarding import MAX_ROWS, Outcome
from graphql_api.bulk import rows as bulk
from graphql_api.bulk.rows import Row, RowError, RowInput
from graphql_api.execution.errors import Code

REQUIRED: Final = ("email", "firstName", "lastName")
OPTIONAL: Final = ("role", "departmentId", "hiredAt")


class CsvError(Exception):
    """The file cannot be read as an employees CSV; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class Failure:
    line: int
    field: str | None
    code: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" + ("" if self.field is None else f", {self.field}")
        return f"{where}: {self.code}: {self.message}"


@dataclass
class Summary:
    created: int = 0
    unchanged: int = 0
    failures: list[Failure] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.failures)

    @property
    def rows(self) -> int:
        return self.created + self.unchanged + self.failed


@dataclass(frozen=True, slots=True)
class CsvRow:
    """One record: its line number, and the row or why it is not one."""

    line: int
    row: RowInput | RowError


def _parse_role(value: str) -> Role:
    if not value:
        return Role.EMPLOYEE
    try:
        return Role[value.strip().upper()]
    except KeyError:
        raise ValueError(f"must be one of {', '.join(r.name for r in Role)}") from None


def _parse_hired_at(value: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError("must be an ISO 8601 date or date and time") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _row_of(record: dict[str, str]) -> RowInput | RowError:
    parsers: tuple[tuple[str, Callable[[str], Any]], ...] = (("role", _parse_role), ("hiredAt", _parse_hired_at))
    parsed: dict[str, Any] = {}
    for name, parse in parsers:
        try:
            parsed[name] = parse(record.get(name) or "")
        except ValueError as error:
            return RowError(Code.BAD_USER_INPUT.value, name, str(error))
    return Row(
        email=record["email"],
        first_name=record["firstName"],
        last_name=record["lastName"],
        role=parsed["role"],
        department_id=record.get("departmentId") or None,
        hired_at=parsed["hiredAt"],
    )


def records(binary: BinaryIO) -> Iterator[CsvRow]:
    """The file's records, one at a time; its header is read and checked now (CsvError)."""
    # utf-8-sig: a byte-order mark (spreadsheets write one) is not part of the first column's name.
    text = io.TextIOWrapper(binary, encoding="utf-8-sig", newline="")
    reader = csv.DictReader(text, strict=True)
    with _read_errors(reader):
        header = reader.fieldnames
    if header is None:
        raise CsvError("the file is empty: it needs a header line naming the columns")
    names = [name.strip() for name in header]
    missing = [name for name in REQUIRED if name not in names]
    unknown = [name for name in names if name not in REQUIRED + OPTIONAL]
    if missing or unknown:
        problems = ([f"missing column(s) {', '.join(missing)}"] if missing else []) + (
            [f"unknown column(s) {', '.join(unknown)}"] if unknown else []
        )
        raise CsvError(
            f"line 1: {'; '.join(problems)} (columns: {', '.join(REQUIRED)}, optionally {', '.join(OPTIONAL)})"
        )
    reader.fieldnames = names
    return _rows(reader, text)


def _rows(reader: csv.DictReader[str], text: io.TextIOWrapper) -> Iterator[CsvRow]:
    with _read_errors(reader), _detached(text):
        for record in reader:
            if None in record:
                yield CsvRow(reader.line_num, RowError(Code.BAD_USER_INPUT.value, None, "more fields than columns"))
            elif any(record.get(name) is None for name in REQUIRED):
                yield CsvRow(reader.line_num, RowError(Code.BAD_USER_INPUT.value, None, "fewer fields than columns"))
            else:
                yield CsvRow(reader.line_num, _row_of(record))


@contextmanager
def _detached(text: io.TextIOWrapper) -> Iterator[None]:
    """The wrapper lets go of the caller's file when done: dropping it would close that file."""
    try:
        yield
    finally:
        text.detach()


@contextmanager
def _read_errors(reader: csv.DictReader[str]) -> Iterator[None]:
    try:
        yield
    except UnicodeDecodeError as error:
        # The decoder reads ahead by kilobytes, so no line number is exact here; none is given.
        raise CsvError(f"the file is not UTF-8 ({error.reason}); save it as CSV UTF-8") from None
    except csv.Error as error:
        # line_num counts the records read whole: the broken one starts on the next line.
        raise CsvError(f"line {reader.line_num + 1}: not a valid CSV file ({error})") from None


def batches(rows: Iterator[CsvRow], size: int = MAX_ROWS) -> Iterator[list[CsvRow]]:
    batch: list[CsvRow] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


async def import_records(
    table: Table,
    rows: Iterator[CsvRow],
    summary: Summary,
    *,
    on_batch: Callable[[Summary], None] = lambda _summary: None,
) -> None:
    """Import ``rows`` (from ``records``) into ``summary``, a batch of MAX_ROWS at a time.

    ``on_batch`` gets the running summary after each batch (the progress bar). A CsvError met
    midway stops the import: the batches before it are written and counted in ``summary``,
    and a re-run of the fixed file finds them UNCHANGED. Every call is awaited on the
    caller's event loop (the command's ``asyncio.run``).
    """
    for batch in batches(rows):
        inputs = [(row.line, row.row) for row in batch if isinstance(row.row, Row)]
        imported = await bulk.import_rows(table, [r for _, r in inputs], read=_now, write=_now)
        results = dict(zip((line for line, _ in inputs), imported, strict=True))
        for row in batch:  # in line order
            error = row.row if isinstance(row.row, RowError) else results[row.line].error
            if error is not None:
                summary.failures.append(Failure(row.line, error.field, error.code, error.message))
            elif results[row.line].outcome is Outcome.CREATED:
                summary.created += 1
            else:
                summary.unchanged += 1
        on_batch(summary)


async def _now(call: Callable[[], Awaitable[Any]]) -> Any:
    """A datastore call of the command's, awaited as it is: no request session admits it."""
    return await call()
