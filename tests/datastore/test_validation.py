from __future__ import annotations

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
