"""Checks on values a caller supplies, before any key is built or anything is written.

Every text a caller sends is checked here: its length (the limits below, listed in the
README) and its characters. Control and formatting characters are refused rather than
stripped: silently changing a value would make it differ from what the caller sent and
stored, and each of them is a known way to disguise text (see ``FORBIDDEN``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
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
# RFC 1035: a domain name is at most 253 characters in its text form.
DOMAIN_MAX: Final = 253
# Domains one organisation may own: bounds the organisation item and createOrganization's
# transaction (one marker item per domain).
EMAIL_DOMAINS_MAX: Final = 20

# Refused in every text input:
#   C0 controls (NUL, ESC of ANSI escape codes, ...) and DEL; C1 controls (U+0080-U+009F);
#   bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) and the bidi
#   marks (U+200E, U+200F, U+061C), which reorder how text around them is displayed
#   ("Trojan Source", CVE-2021-42574);
#   zero-width space and word joiner, U+FEFF (BOM), U+2028/U+2029 (line and paragraph
#   separators, which break JavaScript string literals), the interlinear annotation marks
#   (U+FFF9-U+FFFB), the tag characters (U+E0000-U+E007F, used to smuggle hidden ASCII),
#   and lone surrogates (which no UTF-8 encoder accepts).
# Zero-width (non-)joiners (U+200C, U+200D) stay: emoji sequences and several scripts need them.
_FORMATTING: Final = (
    "\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\u2028\u2029"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff"
)
_C1_AND_DEL: Final = "\x7f-\x9f"
FORBIDDEN: Final = re.compile(f"[\x00-\x1f{_C1_AND_DEL}{_FORMATTING}]")
# Multi-line texts (a job's description) may also hold tabs and line breaks (\t \n \r).
FORBIDDEN_MULTILINE: Final = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_C1_AND_DEL}{_FORMATTING}]")


def refuse_controls(value: str, field: str, *, multiline: bool = False) -> str:
    """``value`` unchanged, or InvalidInput naming ``field`` and the first refused character."""
    found = (FORBIDDEN_MULTILINE if multiline else FORBIDDEN).search(value)
    if found is not None:
        raise InvalidInput(field, f"must not contain control or formatting characters (U+{ord(found.group()):04X})")
    return value


def email(value: str, field: str = "email") -> str:
    """The normalised (lower-case) address, or InvalidInput."""
    if len(value) > EMAIL_MAX:
        raise InvalidInput(field, f"must be at most {EMAIL_MAX} characters")
    refuse_controls(value, field)
    try:
        checked = validate_email(value, check_deliverability=False)
    except EmailNotValidError as error:
        raise InvalidInput(field, f"is not a valid email address ({error})") from None
    return checked.normalized.lower()


def email_domain(address: str) -> str:
    """The domain of an address ``email`` returned."""
    return address.rpartition("@")[2]


def domain(value: str, field: str = "domain") -> str:
    """A normalised (lower-case) email domain such as ``acme.co``, or InvalidInput."""
    if len(value) > DOMAIN_MAX:
        raise InvalidInput(field, f"must be at most {DOMAIN_MAX} characters")
    refuse_controls(value, field)
    if "@" in value:
        raise InvalidInput(field, "must be a domain such as example.com, without an @")
    try:
        checked = validate_email(f"postmaster@{value}", check_deliverability=False)
    except EmailNotValidError:
        raise InvalidInput(field, "is not a valid email domain") from None
    return checked.domain.lower()


def domains(values: Iterable[str], field: str = "emailDomains") -> tuple[str, ...]:
    """One or more distinct normalised domains, in the order given, or InvalidInput."""
    found = tuple(dict.fromkeys(domain(value, field) for value in values))
    if not found:
        raise InvalidInput(field, "needs at least one domain")
    if len(found) > EMAIL_DOMAINS_MAX:
        raise InvalidInput(field, f"must hold at most {EMAIL_DOMAINS_MAX} domains")
    return found


def text(value: str, field: str, *, maximum: int, minimum: int = 1, multiline: bool = False) -> str:
    refuse_controls(value, field, multiline=multiline)
    cleaned = value.strip()
    if len(cleaned) < minimum:
        raise InvalidInput(field, "must not be blank" if minimum == 1 else f"needs {minimum}+ characters")
    if len(cleaned) > maximum:
        raise InvalidInput(field, f"must be at most {maximum} characters")
    return cleaned


def name(value: str, field: str = "name") -> str:
    return text(value, field, maximum=NAME_MAX)


def title(value: str, field: str = "title") -> str:
    return text(value, field, maximum=TITLE_MAX)


def description(value: str, field: str = "description") -> str:
    return text(value, field, maximum=DESCRIPTION_MAX, minimum=0, multiline=True)


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
