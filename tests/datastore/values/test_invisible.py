"""The invisible code points: the table against Unicode's data, and where the ones that stay may stand."""

from __future__ import annotations

import sys
import unicodedata

import pytest
import regex

from datastore.values import invisible

EVERY_CODE_POINT = "".join(chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF)


def ranges_matching(pattern: str) -> list[tuple[int, int]]:
    """The code points ``pattern`` matches (one character each), as merged ranges."""
    return [(ord(m.group()[0]), ord(m.group()[-1])) for m in regex.finditer(f"(?:{pattern})+", EVERY_CODE_POINT)]


def test_default_ignorable__the_table_is_unicodes_property_over_every_code_point() -> None:
    # The regex module builds \p{...} from the Unicode Character Database (17.0.0 in regex
    # 2026.11); a newer Unicode that changes the property fails here and names the difference.
    assert tuple(ranges_matching(r"\p{Default_Ignorable_Code_Point}")) == invisible.DEFAULT_IGNORABLE


def test_default_ignorable__the_issues_examples() -> None:
    ignorable = {cp for first, last in invisible.DEFAULT_IGNORABLE for cp in range(first, last + 1)}
    assert {0x00AD, 0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0xFE0F, 0x200D} <= ignorable
    assert 0x2800 not in ignorable  # not default-ignorable: listed apart, as a blank glyph
    assert 0x3000 not in ignorable  # IDEOGRAPHIC SPACE is a space (trimmed, or a visible gap)


def test_blank_glyphs__draw_nothing_yet_are_symbols_not_spaces() -> None:
    for first, last in invisible.BLANK_GLYPHS:
        for cp in range(first, last + 1):
            assert unicodedata.category(chr(cp)) == "So" and not chr(cp).isspace()


STAY = {
    *range(0x200C, 0x200E),  # joiners
    *range(0xFE00, 0xFE10),  # variation selectors 1-16
    *range(0xE0100, 0xE01F0),  # ideographic variation selectors
    *range(0x180B, 0x1810),  # Mongolian selectors and vowel separator
}
INVISIBLE = [
    cp for first, last in invisible.DEFAULT_IGNORABLE + invisible.BLANK_GLYPHS for cp in range(first, last + 1)
]


def test_refusal__every_invisible_code_point_but_those_that_stay__refused_between_letters() -> None:
    for cp in INVISIBLE:
        why = invisible.refusal(f"A{chr(cp)}b")
        if cp in STAY:
            assert why is None or why.startswith("may hold"), hex(cp)
        else:
            assert why == f"must not contain invisible characters ({invisible.describe(chr(cp))})", hex(cp)


def test_refusal__identifier__every_invisible_code_point_refused() -> None:
    for cp in INVISIBLE:
        assert invisible.refusal(f"a{chr(cp)}b", identifier=True) is not None, hex(cp)


@pytest.mark.parametrize(
    "text",
    ["\u3164", "\u115f", "\u1160", "\uffa0", "\u2800", "\u3164 \u2800", "\u200d", "\ufe0f", "\u00ad\u034f"],
)
def test_refusal__only_invisible__blank(text: str) -> None:
    assert invisible.refusal(text) == "must not be blank: it holds only invisible characters"


STAYS = {
    "emoji zwj sequence": "\U0001f469\u200d\U0001f4bb dev",
    "skin tone then zwj": "\U0001f469\U0001f3fd\u200d\U0001f4bb",
    "rainbow flag (selector, then zwj)": "\U0001f3f3\ufe0f\u200d\U0001f308",
    "emoji presentation": "Team \u2764\ufe0f",
    "text presentation": "\u2764\ufe0e",
    "keycap": "#\ufe0f\u20e3 One",
    "persian zwnj": "\u0645\u0647\u0631\u200c\u062f\u0627\u062f",
    "devanagari half form": "\u0915\u094d\u200d\u0937",
    "legacy malayalam chillu ends a word": "\u0d05\u0d35\u0d28\u0d4d\u200d",
    "japanese ideographic variant": "\u845b\U000e0100\u98fe",
    "unified ideograph of the compatibility block": "\ufa0e\U000e0100",
    "mongolian selector": "\u1828\u180b\u1822",
    "mongolian vowel separator": "\u182d\u1820\u1837\u180e\u1820",
}


@pytest.mark.parametrize("text", STAYS.values(), ids=list(STAYS))
def test_refusal__joiners_and_selectors_where_they_belong__accepted(text: str) -> None:
    assert invisible.refusal(text) is None


MISPLACED = {
    "zwj first": ("\u200dAda", "U+200D ZERO WIDTH JOINER only right after a visible character"),
    "zwj after a space": ("Ada \u200dLovelace", "U+200D ZERO WIDTH JOINER only right after a visible character"),
    "two joiners": ("A\u200d\u200cb", "U+200C ZERO WIDTH NON-JOINER only right after a visible character"),
    "selector first": ("\ufe0fAda", "U+FE0F VARIATION SELECTOR-16 only right after a visible character"),
    "two selectors": ("A\ufe0f\ufe0f", "U+FE0F VARIATION SELECTOR-16 only right after a visible character"),
    "selector after a joiner": ("A\u200d\ufe0f", "U+FE0F VARIATION SELECTOR-16 only right after a visible character"),
    "ideographic selector after a latin letter": ("Ada\U000e0100", "U+E0100 VARIATION SELECTOR-17 only right after"),
    "ideographic selector after an emoji": ("\U0001f600\U000e01ef", "U+E01EF VARIATION SELECTOR-256 only right after"),
    "ideographic selector after a compatibility ideograph": ("\uf900\U000e0100", "only right after a CJK ideograph"),
    "mongolian selector after latin": ("a\u180b", "U+180B MONGOLIAN FREE VARIATION SELECTOR ONE only right after"),
    "mongolian separator at the end": ("\u182d\u180e", "U+180E MONGOLIAN VOWEL SEPARATOR only between Mongolian"),
    "mongolian separator after latin": ("a\u180e\u1820", "U+180E MONGOLIAN VOWEL SEPARATOR only between Mongolian"),
}


@pytest.mark.parametrize(("text", "reason"), MISPLACED.values(), ids=list(MISPLACED))
def test_refusal__joiners_and_selectors_out_of_place__refused(text: str, reason: str) -> None:
    why = invisible.refusal(text)
    assert why is not None and why.startswith("may hold ") and reason in why, why


def test_refusal__ideographic_selectors_follow_every_unified_ideograph_and_nothing_else() -> None:
    # Unified_Ideograph per the regex module, over the code points Python's unicodedata knows.
    unified = regex.compile(r"\p{Unified_Ideograph}")
    for cp in range(sys.maxunicode + 1):
        char = chr(cp)
        if 0xD800 <= cp <= 0xDFFF or unicodedata.category(char) in ("Cn", "Co") or invisible.INVISIBLE.match(char):
            continue
        accepted = invisible.refusal(f"{char}\U000e0100") is None
        assert accepted == (unified.match(char) is not None), hex(cp)


def test_describe__unassigned_code_point__just_its_number() -> None:
    assert invisible.describe("\u2065") == "U+2065"
    assert invisible.describe("\u00ad") == "U+00AD SOFT HYPHEN"


def test_visible__drops_every_invisible_code_point() -> None:
    assert invisible.visible("A\u00adda\u200d\ufe0f \u2800") == "Ada "
