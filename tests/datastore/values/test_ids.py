"""ids: one canonical spelling per id, checked where an id enters; minted in order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from datastore.values import ids
from datastore.values.ids import EmployeeId

EMP = "01HZX3V7Q4M2N8P5R6S7T8V9W3"


@pytest.mark.parametrize(
    "value",
    [
        EMP.lower(),
        EMP[:5].lower() + EMP[5:],
        f" {EMP}",
        f"{EMP} ",
        f"{EMP}\n",
        f"0{EMP}",
        EMP.replace("0", "O"),
        EMP.replace("1", "I"),
    ],
    ids=["lower", "mixed-case", "leading-space", "trailing-space", "newline", "padded", "O-for-0", "I-for-1"],
)
def test_parse__non_canonical_spelling__none(value: str) -> None:
    assert ids.parse(EmployeeId, value) is None


@pytest.mark.parametrize(
    "value",
    [
        "",
        "not-a-ulid",
        EMP[:-1],
        EMP + "0",
        EMP[:-1] + "U",  # outside Crockford's alphabet
        EMP[:-1] + "!",
        "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",  # overflows 128 bits
        f"{EMP[:-1]}#",
        None,
        26,
    ],
)
def test_parse__malformed__none(value: object) -> None:
    assert ids.parse(EmployeeId, value) is None


def test_parse__canonical__the_id_itself() -> None:
    assert ids.parse(EmployeeId, EMP) == EMP


def test_new_id__a_canonical_ulid_greater_than_the_last() -> None:
    made = [ids.new_id() for _ in range(1000)]
    assert all(ids.parse(str, value) == value for value in made)
    assert made == sorted(made) and len(set(made)) == len(made)


def test_new_id_at__its_time_part_is_the_time_given() -> None:
    at = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    assert ids.id_time(ids.new_id_at(at)) == at
