"""Checks on values a caller supplies, before any key is built or anything is written.

Every text a caller sends is checked here: its length (the limits below, listed in the
README) and its characters. Control and formatting characters are refused rather than
stripped: silently changing a value would make it differ from what the caller sent and
stored, and each of them is a known way to disguise text (see ``FORBIDDEN``). Single-line
texts (names, titles, email addresses, domains) also refuse invisible code points, and a
text that is blank without them (``datastore/values/invisible.py``); a job's description, free
multi-line text, keeps soft hyphens and the like.

Only what a caller sends is checked: values already stored are not re-validated when the
rules tighten (an update that leaves a field out keeps its stored value as it is).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from typing import Final, TypeVar

from datastore.errors import Field, InvalidInput
from datastore.values import invisible

E = TypeVar("E", bound=StrEnum)

NAME_MAX: Final = 100
TITLE_MAX: Final = 200
DESCRIPTION_MAX: Final = 10_000
# RFC 5321 4.5.3.1.3 (a path of 256 octets less its angle brackets, RFC 3696 erratum 1690),
# and 4.5.3.1.1: a local part of 64. Octets, so bytes of UTF-8 for an international address
# (RFC 6531). The domain's 255 (4.5.3.1.2) follows from the total; email-validator also holds
# its IDNA form to RFC 1035's 253 and each label to 63.
EMAIL_MAX: Final = 254
EMAIL_LOCAL_MAX: Final = 64
# An email domain holds addresses of at most EMAIL_MAX bytes, at least "a@" before it.
DOMAIN_MAX: Final = EMAIL_MAX - 2
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
#   lone surrogates (which no UTF-8 encoder accepts);
#   the 66 noncharacters (U+FDD0-U+FDEF and the last two code points of every plane, U+FFFE,
#   U+FFFF, ..., U+10FFFF): Unicode keeps them for a program's internal use, never for text
#   interchange, and a client or a byte-order check may take U+FFFE and U+FFFF for a sentinel.
# Zero-width (non-)joiners (U+200C, U+200D) stay: emoji sequences and several scripts need them.
_NONCHARACTERS: Final = "\ufdd0-\ufdef" + "".join(
    f"{chr(plane << 16 | 0xFFFE)}{chr(plane << 16 | 0xFFFF)}" for plane in range(17)
)
_FORMATTING: Final = (
    "\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\u2028\u2029"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff" + _NONCHARACTERS
)
_C1_AND_DEL: Final = "\x7f-\x9f"
FORBIDDEN: Final = re.compile(f"[\x00-\x1f{_C1_AND_DEL}{_FORMATTING}]")
# Multi-line texts (a job's description) may also hold tabs and line breaks (\t \n \r).
FORBIDDEN_MULTILINE: Final = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_C1_AND_DEL}{_FORMATTING}]")


def refuse_controls(value: str, field: Field, *, multiline: bool = False) -> str:
    """``value`` unchanged, or InvalidInput naming ``field`` and the first refused character."""
    found = (FORBIDDEN_MULTILINE if multiline else FORBIDDEN).search(value)
    if found is not None:
        raise InvalidInput(field, f"must not contain control or formatting characters (U+{ord(found.group()):04X})")
    return value


def refuse_invisible(value: str, field: Field, *, identifier: bool = False) -> str:
    """``value`` unchanged, or InvalidInput naming ``field`` and its first invisible code point out of place.

    ``identifier`` (email addresses, domains) refuses every invisible code point; other
    single-line texts keep the joiners and selectors ``datastore/values/invisible.py`` allows, and
    must not be blank without them.
    """
    why = invisible.refusal(value, identifier=identifier)
    if why is not None:
        raise InvalidInput(field, why)
    return value


def _utf8_length(value: str) -> int:
    return len(value.encode("utf-8"))  # no lone surrogates: refuse_controls has run


def email(value: str, field: Field = "email") -> str:
    """The normalised (lower-case) address, or InvalidInput.

    RFC 5321's lengths hold for the address as given and as stored (NFC, lower case, which can
    lengthen it: U+0130 lower-cases to two code points), so sign-in, which looks addresses
    up through here too, refuses the same ones.
    """
    if len(value) > EMAIL_MAX:  # a character is at least a byte: a cheap bound before any parsing
        raise InvalidInput(field, f"must be at most {EMAIL_MAX} bytes (RFC 5321)")
    refuse_controls(value, field)
    refuse_invisible(value, field, identifier=True)
    # Imported on first use (as in ``domain``): most requests check no address, and a serving
    # process answers its first without it.
    from email_validator import EmailNotValidError, validate_email

    try:
        checked = validate_email(value, check_deliverability=False)
    except EmailNotValidError as error:
        raise InvalidInput(field, f"is not a valid email address ({error})") from None
    address = checked.normalized.lower()
    for form, which in ((value, ""), (address, " once normalised")):
        local = _utf8_length(form.rpartition("@")[0])
        if local > EMAIL_LOCAL_MAX:
            reason = f"must have at most {EMAIL_LOCAL_MAX} bytes before the @ (RFC 5321), not {local}{which}"
            raise InvalidInput(field, reason)
    total = _utf8_length(address)
    if total > EMAIL_MAX:
        raise InvalidInput(field, f"must be at most {EMAIL_MAX} bytes (RFC 5321), not {total} once normalised")
    return address


def email_domain(address: str) -> str:
    """The domain of an address ``email`` returned."""
    return address.rpartition("@")[2]


def domain(value: str, field: Field = "domain") -> str:
    """A normalised (lower-case) email domain such as ``acme.co``, or InvalidInput."""
    if len(value) > DOMAIN_MAX:
        reason = f"must be at most {DOMAIN_MAX} characters, so that an address in it fits RFC 5321's {EMAIL_MAX}"
        raise InvalidInput(field, reason)
    refuse_controls(value, field)
    refuse_invisible(value, field, identifier=True)
    if "@" in value:
        raise InvalidInput(field, "must be a domain such as example.com, without an @")
    from email_validator import EmailNotValidError, validate_email

    try:
        # The shortest address in the domain: only the domain's own rules and RFC 5321's total apply.
        checked = validate_email(f"a@{value}", check_deliverability=False)
    except EmailNotValidError:
        raise InvalidInput(field, "is not a valid email domain") from None
    return checked.domain.lower()


def domains(values: Iterable[str], field: Field = "email_domains") -> tuple[str, ...]:
    """One or more distinct normalised domains, in the order given, or InvalidInput."""
    found = tuple(dict.fromkeys(domain(value, field) for value in values))
    if not found:
        raise InvalidInput(field, "needs at least one domain")
    if len(found) > EMAIL_DOMAINS_MAX:
        raise InvalidInput(field, f"must hold at most {EMAIL_DOMAINS_MAX} domains")
    return found


def text(value: str, field: Field, *, maximum: int, minimum: int = 1, multiline: bool = False) -> str:
    """``value`` trimmed and checked: characters, blankness, length; invisible code points when single-line."""
    refuse_controls(value, field, multiline=multiline)
    cleaned = value.strip()
    if len(cleaned) < minimum:
        raise InvalidInput(field, "must not be blank" if minimum == 1 else f"needs {minimum}+ characters")
    if len(cleaned) > maximum:
        raise InvalidInput(field, f"must be at most {maximum} characters")
    if not multiline:
        refuse_invisible(cleaned, field)
    return cleaned


def name(value: str, field: Field = "name") -> str:
    return text(value, field, maximum=NAME_MAX)


def title(value: str, field: Field = "title") -> str:
    return text(value, field, maximum=TITLE_MAX)


def description(value: str, field: Field = "description") -> str:
    return text(value, field, maximum=DESCRIPTION_MAX, minimum=0, multiline=True)


def choice(kind: type[E], value: str, field: Field) -> E:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise InvalidInput(field, f"must be one of {allowed}") from None
