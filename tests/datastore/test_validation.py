from __future__ import annotations

from collections.abc import Callable

import pytest

from datastore import validation
from datastore.entities import ApplicationStatus, Role
from datastore.errors import InvalidInput
from datastore.pagination import MAX_PAGE_SIZE


def test_email__normalises_to_lower_case() -> None:
    assert validation.email("  Alice@Acme.CO".strip()) == "alice@acme.co"


@pytest.mark.parametrize("value", ["", "alice", "alice@", "@acme.co", "alice@@acme.co", "a b@acme.co", "alice@acme"])
def test_email__wrong_shape__raises_invalid_input(value: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validation.email(value, "adminEmail")
    assert raised.value.field == "adminEmail"


def test_email__too_long__raises_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="at most 254"):
        validation.email("a" * 250 + "@acme.co")


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


@pytest.mark.parametrize("first", [0, 1, MAX_PAGE_SIZE])
def test_page_size__within_bounds__is_accepted(first: int) -> None:
    assert validation.page_size(first) == first


@pytest.mark.parametrize("first", [-1, MAX_PAGE_SIZE + 1])
def test_page_size__out_of_bounds__raises_invalid_input(first: int) -> None:
    with pytest.raises(InvalidInput):
        validation.page_size(first)


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
}


@pytest.mark.parametrize("char", REFUSED.values(), ids=list(REFUSED))
@pytest.mark.parametrize("position", ["start", "middle", "end"])
def test_name__control_or_formatting_character__invalid_input_naming_the_field(char: str, position: str) -> None:
    value = {"start": f"{char}Ada", "middle": f"A{char}da", "end": f"Ada{char}"}[position]
    with pytest.raises(InvalidInput, match=f"U\\+{ord(char):04X}") as raised:
        validation.name(value, "firstName")
    assert raised.value.field == "firstName"


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
}


@pytest.mark.parametrize("value", ORDINARY.values(), ids=list(ORDINARY))
def test_name__ordinary_unicode_and_joiners__accepted(value: str) -> None:
    assert validation.name(value) == value


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
        validation.domain(value, "emailDomains")
    assert raised.value.field == "emailDomains"


def test_domain__too_long__invalid_input() -> None:
    with pytest.raises(InvalidInput, match=f"at most {validation.DOMAIN_MAX}"):
        validation.domain("a" * validation.DOMAIN_MAX + ".co")


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
