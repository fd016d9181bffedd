"""The export format: JSON Lines, gzip-compressed, versioned (``hr-export`` version 1).

Every line is one JSON object, its keys sorted, no spaces, UTF-8, ending in ``\\n``; a line
is one of four records:

    {"format":"hr-export","version":1,"orgId":...,"layout":...,"exportedAt":...,"source":...}
        the header, first: the format and its version, the organisation, the table's data
        layout the items are in (datastore/upkeep/layout_version.py), when and from which table
    {"family":"root","item":{...},"kind":"Employee"}
        one item: its family (datastore/lifecycle/walk.py), its kind (layout.py's tag) and the
        item exactly as DynamoDB stores it, in DynamoDB's JSON (``{"S": ...}``, ``{"N": "3"}``),
        less any attribute its kind classifies as secret (datastore/lifecycle/kinds.py)
    {"checkpoint":"..."}
        where a download can resume (``GET /export?after=...``, graphql_api/http/export.py);
        only in downloads, never in a file the command writes
    {"end":{"items":N,"kinds":{"Employee":n,...}}}
        the last line: how many items, by kind, the whole export holds. A file without it, or
        whose items do not add up to it, is incomplete and is never restored.

Items come in walk order: family, then partition key, then sort key. The same data exported
twice gives the same item lines, byte for byte; the header differs by its time and source.

A CSV made from an export (``EmployeesCsv``: its employees) neutralises every cell that a spreadsheet would
run as a formula (OWASP, "CSV Injection"): a cell starting with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return gets a leading apostrophe, since a name like ``=HYPERLINK(...)`` is
valid input.
"""

from __future__ import annotations

import csv
import gzip
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Final

import orjson

from datastore.kinds import layout
from datastore.lifecycle import kinds
from datastore.values import items
from datastore.values.ids import OrgId
from datastore.values.items import Item

FORMAT: Final = "hr-export"
VERSION: Final = 1
# gzip level: exports are written once and kept; JSON this repetitive gains little past 6.
COMPRESSION: Final = 6
_DUMPS_OPTIONS: Final = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


class ExportFileError(Exception):
    """A file that is not a complete export of this format: the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Header:
    org_id: OrgId
    layout: int
    exported_at: datetime
    source: str

    def line(self) -> bytes:
        return orjson.dumps(
            {
                "format": FORMAT,
                "version": VERSION,
                "orgId": self.org_id,
                "layout": self.layout,
                "exportedAt": items.timestamp(self.exported_at),
                "source": self.source,
            },
            option=_DUMPS_OPTIONS,
        )


@dataclass(frozen=True, slots=True)
class Record:
    """One exported item, with its family and kind."""

    family: str
    kind: str
    item: Item


@dataclass
class Tally:
    """Items written (or read), by kind: the end line's figures."""

    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def items(self) -> int:
        return sum(self.kinds.values())

    def line(self) -> bytes:
        return orjson.dumps({"end": {"items": self.items, "kinds": dict(self.kinds)}}, option=_DUMPS_OPTIONS)


def exported_item(kind: str, item: Item) -> Item:
    """``item`` as an export holds it: less the attributes its kind classifies as secret."""
    secret = kinds.policy_of(kind).secret
    return {name: value for name, value in item.items() if name not in secret} if secret else item


def item_line(record: Record) -> bytes:
    return orjson.dumps({"family": record.family, "kind": record.kind, "item": record.item}, option=_DUMPS_OPTIONS)


def checkpoint_line(cursor: str) -> bytes:
    return orjson.dumps({"checkpoint": cursor}, option=_DUMPS_OPTIONS)


# --- reading ----------------------------------------------------------------------------------


def _header(line: Any) -> Header:
    if not isinstance(line, dict) or line.get("format") != FORMAT:
        raise ExportFileError(f"not an {FORMAT} file: its first line is no {FORMAT} header")
    if line.get("version") != VERSION:
        raise ExportFileError(f"{FORMAT} version {line.get('version')!r}: this release reads version {VERSION}")
    try:
        return Header(
            OrgId(str(line["orgId"])),
            int(line["layout"]),
            items.parse_timestamp(str(line["exportedAt"])),
            str(line.get("source", "")),
        )
    except (KeyError, ValueError, TypeError) as error:
        raise ExportFileError(f"the header lacks or garbles {error}") from None


def _record(line: Any, number: int) -> Record | Tally | None:
    """An item, the end line's tally, or None for a checkpoint."""
    if not isinstance(line, dict):
        raise ExportFileError(f"line {number} is not a JSON object")
    if "checkpoint" in line:
        return None
    if "end" in line:
        end = line["end"]
        if not isinstance(end, dict) or not isinstance(end.get("kinds"), dict):
            raise ExportFileError(f"line {number}: a garbled end line")
        return Tally(Counter({str(kind): int(count) for kind, count in end["kinds"].items()}))
    family, kind, item = line.get("family"), line.get("kind"), line.get("item")
    if not isinstance(family, str) or not isinstance(kind, str) or not isinstance(item, dict):
        raise ExportFileError(f"line {number} is no item, checkpoint or end line")
    return Record(family, kind, item)


def read(stream: IO[bytes]) -> tuple[Header, Iterator[Record]]:
    """The header of a gzip-compressed export, and its items, checked as they are read.

    The items' iterator raises ExportFileError for a garbled line, and at its end unless the
    end line came last and its figures match the items read: a truncated or edited file
    fails, though only once read through (``check`` reads it all first).
    """
    lines = _lines(stream)
    try:
        header = _header(next(lines))
    except StopIteration:
        raise ExportFileError("an empty file") from None

    def records() -> Iterator[Record]:
        seen = Tally()
        end: Tally | None = None
        for number, line in enumerate(lines, start=2):
            found = _record(line, number)
            if found is None:
                continue
            if end is not None:
                raise ExportFileError(f"line {number} comes after the end line")
            if isinstance(found, Tally):
                end = found
                continue
            seen.kinds[found.kind] += 1
            yield found
        if end is None:
            raise ExportFileError("the file ends before its end line: the export is incomplete")
        if +end.kinds != +seen.kinds:
            raise ExportFileError(f"the items ({dict(seen.kinds)}) do not add up to the end line's ({dict(end.kinds)})")

    return header, records()


def _lines(stream: IO[bytes]) -> Iterator[Any]:
    try:
        with gzip.open(stream, "rb") as unzipped:  # closing it leaves ``stream`` open
            for raw in unzipped:
                if raw.strip():
                    yield orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise ExportFileError(f"a line is not JSON: {error}") from None
    except (OSError, EOFError) as error:  # gzip: not gzip, or cut short
        raise ExportFileError(f"not a readable gzip file: {error}") from None


def check(stream: IO[bytes]) -> tuple[Header, Tally]:
    """Read a whole export through: its header and its items by kind, or ExportFileError."""
    header, records = read(stream)
    tally = Tally()
    for record in records:
        tally.kinds[record.kind] += 1
    return header, tally


# --- CSV ----------------------------------------------------------------------------------------

# A cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV Injection").
FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")
EMPLOYEE_COLUMNS: Final = (
    "employeeId",
    "email",
    "firstName",
    "lastName",
    "departmentId",
    "role",
    "status",
    "hiredAt",
    "terminatedAt",
)


def neutralise(cell: str) -> str:
    """``cell`` made inert in a spreadsheet: a formula's first character is quoted."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


class EmployeesCsv:
    """The employees of an export as CSV rows, one ``add`` at a time, every cell neutralised."""

    def __init__(self, out: IO[str]) -> None:
        self._writer = csv.writer(out, lineterminator="\n")
        self._writer.writerow(EMPLOYEE_COLUMNS)
        self.rows = 0

    def add(self, record: Record) -> None:
        if record.kind != layout.EMPLOYEE.tag:
            return
        employee = layout.EMPLOYEE.read(record.item)
        row = [
            employee.emp_id,
            employee.email,
            employee.first_name,
            employee.last_name,
            employee.department_id or "",
            employee.role.value,
            employee.status.value,
            items.timestamp(employee.hired_at),
            "" if employee.terminated_at is None else items.timestamp(employee.terminated_at),
        ]
        self._writer.writerow([neutralise(cell) for cell in row])
        self.rows += 1
