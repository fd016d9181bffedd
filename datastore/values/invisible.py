"""Invisible code points in single-line text: which are refused, and where the few that stay may stand.

A name made only of invisible characters looks blank, and one with an invisible character
inside looks like another name that lacks it. Two sets of code points are invisible here:

* Unicode's ``Default_Ignorable_Code_Point`` property (UAX #44): code points a renderer
  draws as nothing when it does not support them (the soft hyphen, the combining grapheme
  joiner, the Hangul fillers, the variation selectors, the tag characters, ...). Python's
  ``unicodedata`` does not expose this property, so ``DEFAULT_IGNORABLE`` lists its ranges
  from ``DerivedCoreProperties.txt`` of Unicode 17.0.0 (the same ranges as in 14.0.0, the
  version of Python 3.11's ``unicodedata``). tests/datastore/values/test_invisible.py compares the
  table with the ``regex`` module's ``\\p{Default_Ignorable_Code_Point}`` over every code point.
* ``BLANK_GLYPHS``: two code points that are not default-ignorable but whose glyph is empty
  by definition (the blank braille cell and the musical null notehead).

Spaces are not here: they are visible as gaps, trimming removes them at either end, and a
text made only of them is blank.

Where names need them, four kinds of default-ignorable code points stay, each only where it
does its job (``_misplaced``); everywhere else they are refused like the rest:

* zero-width non-joiner and joiner (U+200C, U+200D): emoji ZWJ sequences (a woman
  technologist is U+1F469 U+200D U+1F4BB) and several scripts (Persian, the Indic scripts)
  need them. Only right after a visible character (or an emoji's selector: the rainbow flag
  is U+1F3F3 U+FE0F U+200D U+1F308), never at the start, after a space or after another
  joiner. They may end a word: legacy Malayalam chillus end in virama + ZWJ.
* variation selectors 1-16 (U+FE00-U+FE0F): emoji presentation (a red heart is U+2764
  U+FE0F), text presentation, and the standardized variants of mathematical symbols and of
  other scripts. One, right after a visible character.
* ideographic variation selectors 17-256 (U+E0100-U+E01EF): Japanese names as registries
  record them (a variant of 葛 or 辻). One, right after a CJK unified ideograph, the only
  characters they are defined on (UTS #37).
* Mongolian free variation selectors (U+180B-U+180D, U+180F) and the vowel separator
  (U+180E): traditional Mongolian script. A selector right after a Mongolian letter; the
  separator between a Mongolian letter (or its selector) and a Mongolian letter.

Identifiers (email addresses) get no exception: an invisible difference there makes two
addresses that look the same, and no address needs one.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

# Default_Ignorable_Code_Point: the ranges of DerivedCoreProperties-17.0.0.txt, adjacent
# entries merged (the file splits ranges by general category).
DEFAULT_IGNORABLE: Final[tuple[tuple[int, int], ...]] = (
    (0x00AD, 0x00AD),  # SOFT HYPHEN
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x115F, 0x1160),  # HANGUL CHOSEONG FILLER, HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ, AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS ONE-THREE, VOWEL SEPARATOR, FVS FOUR
    (0x200B, 0x200F),  # ZERO WIDTH SPACE, ZWNJ, ZWJ, LEFT-TO-RIGHT MARK, RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # WORD JOINER, invisible operators, <reserved-2065>, bidi isolates, deprecated formats
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTOR-1 to -16
    (0xFEFF, 0xFEFF),  # ZERO WIDTH NO-BREAK SPACE (BOM)
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # <reserved>
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT LETTER OVERLAP to UP STEP
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM to END PHRASE
    (0xE0000, 0xE0FFF),  # LANGUAGE TAG, tag characters, VARIATION SELECTOR-17 to -256, <reserved>
)
# Not default-ignorable (a renderer must draw them), but what it draws is empty.
BLANK_GLYPHS: Final[tuple[tuple[int, int], ...]] = (
    (0x2800, 0x2800),  # BRAILLE PATTERN BLANK
    (0x1D159, 0x1D159),  # MUSICAL SYMBOL NULL NOTEHEAD
)


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in ranges)


INVISIBLE: Final = re.compile(f"[{_char_class(DEFAULT_IGNORABLE + BLANK_GLYPHS)}]")

_JOINERS: Final = frozenset("\u200c\u200d")
_SELECTORS: Final = frozenset(map(chr, range(0xFE00, 0xFE10)))
_IDEOGRAPHIC_SELECTORS: Final = frozenset(map(chr, range(0xE0100, 0xE01F0)))
_MONGOLIAN_SELECTORS: Final = frozenset("\u180b\u180c\u180d\u180f")
_MONGOLIAN_VOWEL_SEPARATOR: Final = "\u180e"
_ANY_SELECTOR: Final = _SELECTORS | _IDEOGRAPHIC_SELECTORS | _MONGOLIAN_SELECTORS


def describe(char: str) -> str:
    """``U+3164 HANGUL FILLER``, or just the code point when it has no name (unassigned)."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name}".rstrip()


def visible(text: str) -> str:
    """``text`` without its invisible code points, those that stay included."""
    return INVISIBLE.sub("", text)


def _base(char: str) -> bool:
    """A visible character: something a joiner or selector can attach to."""
    return char != "" and not char.isspace() and INVISIBLE.match(char) is None


def _ideograph(char: str) -> bool:
    # Unified_Ideograph: the CJK unified ideographs, and twelve in the compatibility block
    # (U+FA0E, ...) that are unified too; those are the ones with no decomposition.
    name = unicodedata.name(char, "")
    return name.startswith("CJK UNIFIED IDEOGRAPH-") or (
        name.startswith("CJK COMPATIBILITY IDEOGRAPH-") and not unicodedata.decomposition(char)
    )


def _mongolian_letter(char: str) -> bool:
    return "\u1820" <= char <= "\u18aa" and unicodedata.category(char).startswith("L")


def _misplaced(char: str, before: str, after: str) -> str | None:
    """Why ``char``, one of the invisible code points that stay, cannot stand between ``before`` and ``after``."""
    if char in _JOINERS:
        if _base(before) or before in _ANY_SELECTOR:
            return None
        return "only right after a visible character"
    if char in _SELECTORS:
        return None if _base(before) else "only right after a visible character"
    if char in _IDEOGRAPHIC_SELECTORS:
        return None if _ideograph(before) else "only right after a CJK ideograph"
    if char in _MONGOLIAN_SELECTORS:
        return None if _mongolian_letter(before) else "only right after a Mongolian letter"
    if char == _MONGOLIAN_VOWEL_SEPARATOR:
        if (_mongolian_letter(before) or before in _MONGOLIAN_SELECTORS) and _mongolian_letter(after):
            return None
        return "only between Mongolian letters"
    return ""  # never stays


def refusal(text: str, *, identifier: bool = False) -> str | None:
    """Why ``text`` cannot be taken, naming its first invisible code point out of place; None if it can.

    ``identifier`` (an email address): every invisible code point is refused. Otherwise
    (names, titles, searches) a text must keep something visible once every invisible code
    point is removed, and only the joiners and selectors above stay, each where it belongs.
    """
    if not identifier and text and not visible(text).strip():
        return "must not be blank: it holds only invisible characters"
    for found in INVISIBLE.finditer(text):
        char, at = found.group(), found.start()
        why = "" if identifier else _misplaced(char, text[at - 1 : at], text[at + 1 : at + 2])
        if why == "":
            return f"must not contain invisible characters ({describe(char)})"
        if why is not None:
            return f"may hold {describe(char)} {why}"
    return None
