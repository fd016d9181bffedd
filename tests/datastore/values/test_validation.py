from __future__ import annotations

from collections.abc import Callable

import pytest

from datastore.errors import InvalidInput
from datastore.kinds.entities import ApplicationStatus, Role
from datastore.values import validation


def test_email__normalises_to_lower_case() -> None:
    assert validation.email("  Alice@Acme.CO".strip()) == "alice@acme.co"


@pytest.mark.parametrize("value", ["", "alice", "alice@", "@acme.co", "alice@@acme.co", "a b@acme.co", "alice@acme"])
def test_email__wrong_shape__raises_invalid_input(value: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validation.email(value, "email")
    assert raised.value.field == "email"


def test_email__too_long__raises_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="at most 254 bytes"):
        validation.email("a" * 250 + "@acme.co")


# --- RFC 5321 lengths ------------------------------------------------------------------------

DOMAIN_189 = ".".join(["d" * 62, "d" * 62, "d" * 60]) + ".co"  # 189 characters: with "@" and 64 before it, 254


def test_email__local_part_of_64_bytes__accepted() -> None:
    assert validation.email("a" * 64 + "@acme.co") == "a" * 64 + "@acme.co"
    assert validation.email("\u00e9" * 32 + "@acme.co") == "\u00e9" * 32 + "@acme.co"  # 2 bytes each


@pytest.mark.parametrize(
    ("local", "size"),
    [("a" * 65, 65), ("a" * 246, 246), ("\u00e9" * 33, 66), ("\u4e2d" * 22, 66)],
    ids=["65-ascii", "246-ascii-the-issues", "33-two-byte", "22-three-byte"],
)
def test_email__local_part_over_64_bytes__invalid_input_saying_so(local: str, size: int) -> None:
    with pytest.raises(InvalidInput) as raised:
        validation.email(f"{local}@acme.co", "email")
    assert raised.value.field == "email"
    assert raised.value.reason == f"must have at most 64 bytes before the @ (RFC 5321), not {size}"


def test_email__local_part_longer_once_lower_cased__refused_as_stored() -> None:
    # U+0130 (2 bytes) lower-cases to i + U+0307 (3 bytes): 30 of them are 60 bytes as sent, 90 as stored.
    with pytest.raises(InvalidInput, match="at most 64 bytes before the @ \\(RFC 5321\\), not 90 once normalised"):
        validation.email("\u0130" * 30 + "@acme.co")


def test_email__254_bytes__accepted_255_refused() -> None:
    address = f"{'a' * 64}@{DOMAIN_189}"
    assert len(address) == 254
    assert validation.email(address) == address
    with pytest.raises(InvalidInput, match="must be at most 254 bytes \\(RFC 5321\\)"):
        validation.email(address + "m")


def test_email__254_bytes_with_multibyte_characters__refused_by_bytes() -> None:
    address = "\u00e9" * 32 + f"@{DOMAIN_189}"  # 222 characters, 254 bytes
    assert validation.email(address) == address
    with pytest.raises(InvalidInput, match="too long"):
        validation.email(address + "m")  # 223 characters, 255 bytes


def test_email__domain_label_over_63__invalid_input() -> None:
    assert validation.email(f"a@{'d' * 63}.co") == f"a@{'d' * 63}.co"
    with pytest.raises(InvalidInput, match="not a valid email address"):
        validation.email(f"a@{'d' * 64}.co")


# --- invisible characters in emails ---------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["\u3164@acme.co", "ali\u00adce@acme.co", "alice\u200d@acme.co", "alice\ufe0f@acme.co", "a\u2800@acme.co"],
    ids=["hangul-filler", "soft-hyphen", "zwj", "variation-selector", "braille-blank"],
)
def test_email__invisible_character__invalid_input_naming_it(value: str) -> None:
    char = next(c for c in value if not c.isascii())
    with pytest.raises(InvalidInput, match=f"invisible characters \\(U\\+{ord(char):04X} "):
        validation.email(value)


def test_email__invisible_character_in_the_domain__refused_not_silently_dropped() -> None:
    # IDNA mapping would drop it (a@ac\u00adme.co would become a@acme.co): refused instead.
    with pytest.raises(InvalidInput, match="U\\+00AD SOFT HYPHEN"):
        validation.email("a@ac\u00adme.co")
    with pytest.raises(InvalidInput, match="U\\+3164 HANGUL FILLER"):
        validation.domain("ac\u3164me.co")


def test_choice__known_value__returns_the_member() -> None:
    assert validation.choice(Role, "manager", "role") is Role.MANAGER


def test_choice__unknown_value__raises_invalid_input_listing_the_allowed() -> None:
    with pytest.raises(InvalidInput) as raised:
        validation.choice(ApplicationStatus, "hired", "status")
    assert raised.value.field == "status"
    assert "applied, reviewing, rejected, accepted, withdrawn" in raised.value.reason


def test_name__strips_and_bounds() -> None:
    assert validation.name("  Sales ") == "Sales"
    assert validation.name("x" * validation.NAME_MAX) == "x" * validation.NAME_MAX
    with pytest.raises(InvalidInput):
        validation.name("x" * (validation.NAME_MAX + 1))
    with pytest.raises(InvalidInput, match="blank"):
        validation.name("   ")


def test_text__minimum_zero__allows_empty() -> None:
    assert validation.text("", "description", maximum=10, minimum=0) == ""


# --- control and formatting characters -------------------------------------------------------

REFUSED = {
    "nul": "\x00",
    "bell": "\x07",
    "escape": "\x1b",
    "del": "\x7f",
    "c1-nel": "\x85",
    "c1-csi": "\x9b",
    "lre": "\u202a",
    "rlo": "\u202e",
    "lri": "\u2066",
    "pdi": "\u2069",
    "rlm": "\u200f",
    "alm": "\u061c",
    "zwsp": "\u200b",
    "word-joiner": "\u2060",
    "bom": "\ufeff",
    "line-separator": "\u2028",
    "tag-a": "\U000e0041",
    "lone-surrogate": "\ud800",
    "noncharacter-ffff": "\uffff",
    "noncharacter-fffe": "\ufffe",
    "noncharacter-fdd0": "\ufdd0",
    "noncharacter-1fffe": "\U0001fffe",
    "noncharacter-10ffff": "\U0010ffff",
}


@pytest.mark.parametrize("char", REFUSED.values(), ids=list(REFUSED))
@pytest.mark.parametrize("position", ["start", "middle", "end"])
def test_name__control_or_formatting_character__invalid_input_naming_the_field(char: str, position: str) -> None:
    value = {"start": f"{char}Ada", "middle": f"A{char}da", "end": f"Ada{char}"}[position]
    with pytest.raises(InvalidInput, match=f"U\\+{ord(char):04X}") as raised:
        validation.name(value, "first_name")
    assert raised.value.field == "first_name"


@pytest.mark.parametrize("char", ["\t", "\n", "\r"], ids=["tab", "lf", "cr"])
def test_line_breaks_and_tabs__refused_in_names_and_titles__kept_in_descriptions(char: str) -> None:
    with pytest.raises(InvalidInput):
        validation.name(f"A{char}B")
    with pytest.raises(InvalidInput):
        validation.title(f"A{char}B")
    assert validation.description(f"A{char}B") == f"A{char}B"


@pytest.mark.parametrize("char", REFUSED.values(), ids=list(REFUSED))
def test_description__other_control_characters__refused(char: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validation.description(f"text{char}more")
    assert raised.value.field == "description"


ORDINARY = {
    "latin-accents": "Zo\u00eb \u00c5ngstr\u00f6m",
    "cjk": "\u674e\u5c0f\u9f8d",
    "arabic": "\u0645\u062d\u0645\u062f",
    "emoji-zwj": "\U0001f469\u200d\U0001f4bb dev",
    "persian-zwnj": "\u0645\u0647\u0631\u200c\u062f\u0627\u062f",
    "emoji-presentation": "Team \u2764\ufe0f",
    "japanese-ideographic-variant": "\u845b\U000e0100\u98fe",
    "ideographic-space-inside": "\u674e\u3000\u5c0f\u9f8d",
}


@pytest.mark.parametrize("value", ORDINARY.values(), ids=list(ORDINARY))
def test_name__ordinary_unicode_and_joiners__accepted(value: str) -> None:
    assert validation.name(value) == value


# --- invisible characters -------------------------------------------------------------------

INVISIBLE_ONLY = {
    "hangul-filler": "\u3164",
    "hangul-choseong-filler": "\u115f",
    "braille-blank": "\u2800",
    "halfwidth-filler": "\uffa0",
    "fillers-and-spaces": " \u3164 \u3000\u115f ",
    "joiner": "\u200d",
    "selector": "\ufe0f",
}


@pytest.mark.parametrize("value", INVISIBLE_ONLY.values(), ids=list(INVISIBLE_ONLY))
@pytest.mark.parametrize("check", [validation.name, validation.title], ids=["name", "title"])
def test_single_line_text__only_invisible_characters__blank(check: Callable[[str, str], str], value: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        check(value, "last_name")
    assert raised.value.field == "last_name"
    assert raised.value.reason == "must not be blank: it holds only invisible characters"


INVISIBLE_INSIDE = {
    "soft-hyphen": "Ada\u00adLovelace",
    "combining-grapheme-joiner": "Ada\u034fLovelace",
    "hangul-filler": "Ada\u3164",
    "braille-blank": "\u2800Ada",
    "khmer-inherent-vowel": "Ada\u17b4",
    "invisible-times": "A\u2062B",
    "shorthand-format": "Ada\U0001bca0",
    "musical-beam": "Ada\U0001d173",
    "null-notehead": "Ada\U0001d159",
}


@pytest.mark.parametrize("value", INVISIBLE_INSIDE.values(), ids=list(INVISIBLE_INSIDE))
def test_name__invisible_character_inside__invalid_input_naming_it(value: str) -> None:
    char = next(c for c in value if not c.isascii())
    with pytest.raises(InvalidInput) as raised:
        validation.name(value, "first_name")
    assert raised.value.field == "first_name"
    assert raised.value.reason.startswith(f"must not contain invisible characters (U+{ord(char):04X}")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("\u200dAda", "may hold U+200D ZERO WIDTH JOINER only right after a visible character"),
        ("Ada\ufe0f\ufe0f", "may hold U+FE0F VARIATION SELECTOR-16 only right after a visible character"),
        ("Ada\U000e0100", "may hold U+E0100 VARIATION SELECTOR-17 only right after a CJK ideograph"),
    ],
)
def test_name__joiner_or_selector_out_of_place__invalid_input(value: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validation.name(value)
    assert raised.value.reason == reason


def test_description__soft_hyphens_and_selectors_kept() -> None:
    # Free multi-line text: hyphenation hints pasted from a word processor are ordinary there.
    text = "Maschinen\u00adbau\nTeam \u2764\ufe0f\ufe0f"
    assert validation.description(text) == text


def test_email__control_character__invalid_input() -> None:
    with pytest.raises(InvalidInput, match="U\\+0000"):
        validation.email("ali\x00ce@acme.co")


@pytest.mark.parametrize(
    ("check", "limit"),
    [
        (validation.name, validation.NAME_MAX),
        (validation.title, validation.TITLE_MAX),
        (validation.description, validation.DESCRIPTION_MAX),
    ],
)
def test_texts__bounded_at_their_documented_limit(check: Callable[[str], str], limit: int) -> None:
    assert check("x" * limit) == "x" * limit
    with pytest.raises(InvalidInput, match=f"at most {limit}"):
        check("x" * (limit + 1))


# --- domains ---------------------------------------------------------------------------------


def test_domain__normalised_to_lower_case() -> None:
    assert validation.domain("Acme.CO") == "acme.co"


@pytest.mark.parametrize(
    "value", ["", "acme", "a@acme.co", "acme .co", "-acme.co", "acme..co", "acme.co\x00", "ac\u202eme.co"]
)
def test_domain__not_a_domain__invalid_input(value: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validation.domain(value, "email_domains")
    assert raised.value.field == "email_domains"


def test_domain__too_long__invalid_input() -> None:
    with pytest.raises(InvalidInput, match=f"at most {validation.DOMAIN_MAX}"):
        validation.domain("a" * validation.DOMAIN_MAX + ".co")


def test_domain__the_longest_that_holds_an_address__accepted() -> None:
    longest = ".".join(["d" * 62] * 3 + ["d" * 60]) + ".co"  # 252 characters: "a@" and it make 254
    assert len(longest) == validation.DOMAIN_MAX == 252
    assert validation.domain(longest) == longest
    assert validation.email(f"a@{longest}") == f"a@{longest}"
    with pytest.raises(InvalidInput, match="at most 252"):
        validation.domain(longest + "c")


def test_domains__distinct_in_order__at_least_one_and_bounded() -> None:
    assert validation.domains(["b.example", "A.example", "B.EXAMPLE"]) == ("b.example", "a.example")
    with pytest.raises(InvalidInput, match="at least one"):
        validation.domains([])
    many = [f"d{n}.example" for n in range(validation.EMAIL_DOMAINS_MAX + 1)]
    assert len(validation.domains(many[:-1])) == validation.EMAIL_DOMAINS_MAX
    with pytest.raises(InvalidInput, match=f"at most {validation.EMAIL_DOMAINS_MAX}"):
        validation.domains(many)


def test_email_domain__of_a_normalised_address() -> None:
    assert validation.email_domain(validation.email("Alice@Acme.CO")) == "acme.co"
