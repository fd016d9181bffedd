"""docs/api/errors.md, "Error codes a client should handle", lists exactly the codes the code defines."""

from __future__ import annotations

import re

from graphql_api.execution.errors import Code
from graphql_api.http.errors import TransportCode
from tests.paths import ERROR_CODES

HEADING = "# Error codes a client should handle\n"
DEFINED = {code.value for code in Code} | {code.value for code in TransportCode}


def table_rows() -> dict[str, str]:
    """The table's rows by code: everything from the page's heading to its next heading."""
    text = ERROR_CODES.read_text()
    assert text.startswith(HEADING), f"{ERROR_CODES.name} must open with {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([A-Z_]+)` \|(.*)$", section, flags=re.MULTILINE)
    assert len(rows) == len({code for code, _ in rows}), "a code is listed twice"
    return dict(rows)


def test_documented_error_table__codes__exactly_those_defined() -> None:
    assert set(table_rows()) == DEFINED


def test_documented_error_table__retryable_codes__marked_retryable() -> None:
    rows = table_rows()
    for code in ("UNAVAILABLE", "TIMEOUT", "RATE_LIMITED"):
        assert "retryable (`retryable: true`)" in rows[code], rows[code]
