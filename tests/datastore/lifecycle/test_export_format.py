"""The export format: its lines, reading a file back whole or refusing it, and CSV cells."""

from __future__ import annotations

import gzip
import io
from collections import Counter
from datetime import UTC, datetime

import pytest

from datastore.kinds import layout
from datastore.kinds.entities import Employee, EmployeeStatus, Role
from datastore.lifecycle import export_format
from datastore.lifecycle.export_format import ExportFileError, Header, Record, Tally

WHEN = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
ORG = "01HZ0000000000000000000001"
EMPLOYEE = Employee(
    ORG, "01HZ0000000000000000000004", "x@a.example", "=HYPERLINK(\"http://evil\")", "+1", None,
    Role.EMPLOYEE, EmployeeStatus.ACTIVE, WHEN, None, 1,
)  # fmt: skip
RECORD = Record("root", layout.EMPLOYEE.tag, layout.EMPLOYEE.item(EMPLOYEE))


def _file(*lines: bytes) -> io.BytesIO:
    return io.BytesIO(gzip.compress(b"".join(lines)))


def _whole(*records: Record) -> list[bytes]:
    tally = Tally(Counter(record.kind for record in records))
    return [
        Header(ORG, 1, WHEN, "hr-table").line(),
        *(export_format.item_line(record) for record in records),
        tally.line(),
    ]


def test_lines__sorted_keys__one_object_a_line() -> None:
    assert Header(ORG, 1, WHEN, "t").line() == (
        b'{"exportedAt":"2024-05-06T07:08:09.123Z","format":"hr-export","layout":1,'
        b'"orgId":"01HZ0000000000000000000001","source":"t","version":1}\n'
    )
    assert export_format.item_line(Record("root", "Thing", {"b": {"S": "2"}, "a": {"N": "1"}})) == (
        b'{"family":"root","item":{"a":{"N":"1"},"b":{"S":"2"}},"kind":"Thing"}\n'
    )
    assert Tally(Counter({"Thing": 2})).line() == b'{"end":{"items":2,"kinds":{"Thing":2}}}\n'


def test_read__a_whole_file__header_and_items_back() -> None:
    header, records = export_format.read(_file(*_whole(RECORD, RECORD)))

    assert header == Header(ORG, 1, WHEN, "hr-table")
    assert list(records) == [RECORD, RECORD]


def test_read__checkpoints__skipped() -> None:
    lines = _whole(RECORD)
    lines.insert(2, export_format.checkpoint_line("abc"))

    assert list(export_format.read(_file(*lines))[1]) == [RECORD]


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (lambda whole: whole[:-1], "ends before its end line"),
        (lambda whole: [whole[0], whole[1], whole[3]], "do not add up"),
        (lambda whole: [whole[0], whole[1], whole[3], whole[2]], "after the end line"),
        (lambda whole: [b"{}\n", *whole[1:]], "not an hr-export file"),
        (lambda whole: [whole[0].replace(b'"version":1', b'"version":2'), *whole[1:]], "version 2"),
        (lambda whole: [whole[0], b"{nope\n", *whole[1:]], "not JSON"),
        (lambda whole: [], "empty file"),
    ],
)
def test_read__an_incomplete_or_altered_file__refused(lines: object, reason: str) -> None:
    whole = _whole(RECORD, RECORD)
    with pytest.raises(ExportFileError, match=reason):
        export_format.check(_file(*lines(whole)))  # type: ignore[operator]


def test_read__not_gzip__refused() -> None:
    with pytest.raises(ExportFileError, match="gzip"):
        export_format.check(io.BytesIO(b"".join(_whole(RECORD))))


def test_read__gzip_cut_short__refused() -> None:
    compressed = gzip.compress(b"".join(_whole(RECORD)))
    with pytest.raises(ExportFileError):
        export_format.check(io.BytesIO(compressed[: len(compressed) // 2]))


@pytest.mark.parametrize(
    ("cell", "inert"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("Ada", "Ada"),
        ("", ""),
        ("a=b", "a=b"),
    ],
)
def test_neutralise__formula_starts_quoted(cell: str, inert: str) -> None:
    assert export_format.neutralise(cell) == inert


def test_employees_csv__every_cell_neutralised() -> None:
    out = io.StringIO()
    csv = export_format.EmployeesCsv(out)
    csv.add(RECORD)
    csv.add(Record("root", layout.DEPARTMENT.tag, {}))

    header, row = out.getvalue().splitlines()
    assert header.split(",") == list(export_format.EMPLOYEE_COLUMNS)
    assert row == (
        f'{EMPLOYEE.emp_id},x@a.example,"\'=HYPERLINK(""http://evil"")",\'+1,,employee,active,2024-05-06T07:08:09.123Z,'
    )
    assert csv.rows == 1
