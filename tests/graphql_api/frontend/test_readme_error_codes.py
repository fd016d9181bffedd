"""README "Error codes a client should handle" lists exactly the extensions.code values the code defines."""

from __future__ import annotations

import re

from graphql_api.execution.errors import Code
from graphql_api.http.errors import TransportCode
from tests.paths import README

HEADING = "### Error codes a client should handle"
DEFINED = {code.value for code in Code} | {code.value for code in TransportCode}


def table_codes() -> list[str]:
    text = README.read_text()
    assert text.count(HEADING) == 1, f"README must have one {HEADING!r} section"
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `([A-Z_]+)` \|", section, flags=re.MULTILINE)


def test_readme_error_table__codes__exactly_those_defined() -> None:
    codes = table_codes()
    assert len(codes) == len(set(codes)), "a code is listed twice"
    assert set(codes) == DEFINED


def test_readme_error_table__retryable_codes__marked_retryable() -> None:
    section = README.read_text().split(HEADING, 1)[1].split("\n#", 1)[0]
    rows = {match[0]: match[1] for match in re.findall(r"^\| `([A-Z_]+)` \|(.*)$", section, flags=re.MULTILINE)}
    for code in ("UNAVAILABLE", "TIMEOUT", "RATE_LIMITED"):
        assert "retryable (`retryable: true`)" in rows[code], rows[code]
