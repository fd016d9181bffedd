"""Checks on values a caller supplies, before any key is built or anything is written."""

from __future__ import annotations

from enum import StrEnum
from typing import Final, TypeVar

from email_validator import EmailNotValidError, validate_email

from datastore.errors import InvalidInput
from datastore.pagination import MAX_PAGE_SIZE

E = TypeVar("E", bound=StrEnum)

NAME_MAX: Final = 100
TITLE_MAX: Final = 200
DESCRIPTION_MAX: Final = 10_000
EMAIL_MAX: Final = 254


def email(value: str, field: str = "email") -> str:
    """The normalised (lower-case) address, or InvalidInput."""
    if len(value) > EMAIL_MAX:
        raise InvalidInput(field, f"must be at most {EMAIL_MAX} characters")
    try:
        checked = validate_email(value, check_deliverability=False)
    except EmailNotValidError as error:
        raise InvalidInput(field, f"is not a valid email address ({error})") from None
    return checked.normalized.lower()


def text(value: str, field: str, *, maximum: int, minimum: int = 1) -> str:
    cleaned = value.strip()
    if len(cleaned) < minimum:
        raise InvalidInput(field, "must not be blank" if minimum == 1 else f"needs {minimum}+ characters")
    if len(cleaned) > maximum:
        raise InvalidInput(field, f"must be at most {maximum} characters")
    return cleaned


def name(value: str, field: str = "name") -> str:
    return text(value, field, maximum=NAME_MAX)


def choice(kind: type[E], value: str, field: str) -> E:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise InvalidInput(field, f"must be one of {allowed}") from None


def page_size(first: int, field: str = "first") -> int:
    if not 0 <= first <= MAX_PAGE_SIZE:
        raise InvalidInput(field, f"must be between 0 and {MAX_PAGE_SIZE}")
    return first
