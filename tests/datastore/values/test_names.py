"""Folding names, the prefixes an employee is indexed under, and the search text's checks."""

from __future__ import annotations

import pytest

from datastore.errors import InvalidInput
from datastore.values import names


@pytest.mark.parametrize("spelling", ["alice", "Alice", "ALICE", "Ålice", "ÅLİCE", "Àlicé"])
def test_fold__case_and_accents__ignored(spelling: str) -> None:
    assert names.fold(spelling) == "alice"


def test_fold__compatibility_forms_and_sharp_s__expanded() -> None:
    assert names.fold("ﬁona") == "fiona"
    assert names.fold("Straße") == "strasse"
    assert names.fold("李") == "李"


def test_prefixes__shared_prefix_of_first_and_last__indexed_once() -> None:
    assert names.prefixes("Ali", "Alison") == ["", "a", "al", "ali", "alis", "aliso", "alison"]


def test_prefixes__whitespace_ending__skipped_and_longest__cut() -> None:
    assert names.prefixes("Mary Ann", "Lee") == [
        "",
        "l",
        "le",
        "lee",
        "m",
        "ma",
        "mar",
        "mary",
        "mary a",
        "mary an",
        "mary ann",
    ]
    long = names.prefixes("Wolfeschlegelsteinhausen", "X")
    assert max(map(len, long)) == names.SEARCH_MAX
    assert len(long) == 1 + names.SEARCH_MAX + 1


def test_sort_form__long_folded_name__cut_to_name_max() -> None:
    assert len(names.sort_form("\ufdfa" * 10)) == 100  # one ligature folds to 18 characters


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ali", "ali"),
        ("  Åli ", "ali"),
        ("MARY A", "mary a"),
        ("a" * 16, "a" * 16),
        (" " * 10 + "a" * 16 + " " * 10, "a" * 16),
        ("Straß", "strass"),
        ("\U0001f469\u200d\U0001f4bb", "\U0001f469\u200d\U0001f4bb"),  # joiners stay, as in names
    ],
)
def test_search__valid__folded_and_stripped(value: str, expected: str) -> None:
    assert names.search(value) == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "must not be blank"),
        (" \t", "must not contain control or formatting characters (U+0009)"),
        ("   ", "must not be blank"),
        ("\u0301", "must not be blank"),
        ("a" * 17, "must be at most 16 characters"),
        ("\ufb03" * 6, "must be at most 16 characters once case and accents are folded"),
        ("al\x00", "must not contain control or formatting characters (U+0000)"),
        ("al\u200b", "must not contain control or formatting characters (U+200B)"),
        ("\u3164", "must not be blank: it holds only invisible characters"),
        (" \u2800 ", "must not be blank: it holds only invisible characters"),
        ("al\u00ad", "must not contain invisible characters (U+00AD SOFT HYPHEN)"),
        ("\u200dal", "may hold U+200D ZERO WIDTH JOINER only right after a visible character"),
    ],
)
def test_search__bad__invalid_input_on_search(value: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        names.search(value)
    assert (raised.value.field, raised.value.reason) == ("search", reason)
