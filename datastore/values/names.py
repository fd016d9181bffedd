"""Name search: how names are folded, which prefixes an employee is indexed under, and the search text.

A search matches a prefix of the first or the last name, ignoring case and accents. Both
sides are folded the same way: Unicode NFKD (compatibility decomposition, so ``Å`` becomes
``A`` plus a combining ring and ``ﬁ`` becomes ``fi``), combining marks dropped, then
``casefold`` (so ``ß`` matches ``ss``). ``Ålice``, ``alice`` and ``ALICE`` all fold to
``alice``.

An employee is indexed under every distinct prefix of its two folded names, up to
``SEARCH_MAX`` characters, and under the empty prefix (the whole directory, by name). The
prefixes of the two names are one set: an employee whose first and last names share a
prefix ("Ali Alison": ``a``, ``al``, ``ali``) has one entry for each shared prefix, so a
search finds each match once, in a page DynamoDB fills exactly (README "Name search").
"""

from __future__ import annotations

import unicodedata
from typing import Final

from datastore.errors import Field, InvalidInput
from datastore.values import validation

# The longest search, in characters before and after folding: also the longest prefix
# indexed, so it bounds the entries per employee (2 x 16 + 1) and a name change's transaction.
SEARCH_MAX: Final = 16
SEARCH_FIELD: Final[Field] = "search"


def fold(text: str) -> str:
    """``text`` without case or accents: NFKD, combining marks dropped, casefolded."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def sort_form(name: str) -> str:
    """A name as name entries sort by: folded, stripped, and cut to ``validation.NAME_MAX``.

    Folding can lengthen a name (NFKD turns one ligature into up to 18 characters); the cut
    keeps a sort key of two names and an id well under DynamoDB's 1,024 bytes. Names equal in
    their first 100 folded characters are then ordered by employee id.
    """
    return fold(name).strip()[: validation.NAME_MAX]


def _prefixes(folded: str) -> set[str]:
    # A prefix ending in whitespace is never searched for (searches are stripped).
    return {
        folded[:length] for length in range(1, min(len(folded), SEARCH_MAX) + 1) if not folded[length - 1].isspace()
    }


def prefixes(first_name: str, last_name: str) -> list[str]:
    """Every prefix an employee is found under, sorted, the empty one (the directory) first."""
    return sorted({""} | _prefixes(sort_form(first_name)) | _prefixes(sort_form(last_name)))


def search(value: str, field: Field = SEARCH_FIELD) -> str:
    """The folded prefix a search looks up, or InvalidInput naming ``field``.

    Trimmed first, then bounded before folding (so folding works on at most 16 characters)
    and after it (a ligature such as ``ﬃ`` folds to three).
    """
    validation.refuse_controls(value, field)
    trimmed = value.strip()
    if len(trimmed) > SEARCH_MAX:
        raise InvalidInput(field, f"must be at most {SEARCH_MAX} characters")
    validation.refuse_invisible(trimmed, field)  # the rule names follow
    folded = fold(trimmed).strip()
    if not folded:
        raise InvalidInput(field, "must not be blank")
    if len(folded) > SEARCH_MAX:
        raise InvalidInput(field, f"must be at most {SEARCH_MAX} characters once case and accents are folded")
    return folded
