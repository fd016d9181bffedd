"""graphql_api/bulk/csv_file.py: reading an employees CSV, record by record (no DynamoDB)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone

import pytest

from datastore.kinds.entities import Role
from graphql_api.bulk import csv_file as bulk_csv
from graphql_api.bulk.csv_file import CsvError, CsvRow
from graphql_api.bulk.rows import Row, RowError


def read(text: str | bytes) -> list[CsvRow]:
    data = text.encode() if isinstance(text, str) else text
    return list(bulk_csv.records(io.BytesIO(data)))


def test_records__all_columns__parsed_with_line_numbers() -> None:
    rows = read(
        "hiredAt,departmentId,role,lastName,firstName,email\n"
        "2026-03-01,RGVwYXJ0bWVudDox,manager,Lima,Ana,ana@a.example\n"
        "\n"
        '2026-03-01T09:00:00+01:00,,,"Ström, Jr",Åsa,asa@a.example\n'
    )
    assert [r.line for r in rows] == [2, 4]
    first, second = (r.row for r in rows)
    assert first == Row(
        "ana@a.example", "Ana", "Lima", Role.MANAGER, "RGVwYXJ0bWVudDox", datetime(2026, 3, 1, tzinfo=UTC)
    )
    assert isinstance(second, Row)
    assert (second.last_name, second.role, second.department_id) == ("Ström, Jr", Role.EMPLOYEE, None)
    assert second.hired_at == datetime(2026, 3, 1, 9, tzinfo=timezone(timedelta(hours=1)))


def test_records__byte_order_mark__not_part_of_the_first_column() -> None:
    (only,) = read("\ufeffemail,firstName,lastName\na@a.example,A,B\n")
    assert isinstance(only.row, Row) and only.row.email == "a@a.example"


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("a@a.example,A,B,boss,", "role", "must be one of ADMIN, MANAGER, EMPLOYEE"),
        ("a@a.example,A,B,,March", "hiredAt", "must be an ISO 8601 date or date and time"),
        ("a@a.example,A,B,,,extra", None, "more fields than columns"),
        ("a@a.example,A", None, "fewer fields than columns"),
    ],
)
def test_records__bad_record__row_error_on_its_line(line: str, field: str | None, message: str) -> None:
    (only,) = read(f"email,firstName,lastName,role,hiredAt\n{line}\n")
    assert only == CsvRow(2, RowError("BAD_USER_INPUT", field, message))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the file is empty: it needs a header line naming the columns"),
        (
            "email,first_name,lastName\n",
            "line 1: missing column(s) firstName; unknown column(s) first_name (columns: email, firstName, "
            "lastName, optionally role, departmentId, hiredAt)",
        ),
        ('email,firstName,lastName\n"a@a.example,A,B\n', "line 2: not a valid CSV file (unexpected end of data)"),
    ],
)
def test_records__bad_file__csv_error(content: str, message: str) -> None:
    with pytest.raises(CsvError) as raised:
        read(content)
    assert str(raised.value) == message


def test_records__not_utf8__csv_error() -> None:
    with pytest.raises(CsvError, match="the file is not UTF-8"):
        read("email,firstName,lastName\na@a.example,Lé,B\n".encode("latin-1"))


def test_records__large_file__read_as_it_is_consumed() -> None:
    lines = ["email,firstName,lastName"] + [f"p{i}@a.example,First{i},Last{i}" for i in range(50_000)]
    binary = io.BytesIO("\n".join(lines).encode())
    size = len(binary.getvalue())
    batches = bulk_csv.batches(bulk_csv.records(binary))
    first = next(batches)
    assert len(first) == 100 and first[-1].line == 101
    assert binary.tell() < size // 20  # a batch in, the file is still mostly unread
    assert sum(len(batch) for batch in batches) == 49_900
