"""Opaque global ids: ``base64url("<Type>:<id>[:<id>]")``.

The organisation is never part of an id: it comes from the caller's token, so an id taken
from another tenant simply names nothing in the caller's.

Each object has exactly one id: only the spelling ``encode`` writes is accepted. A padded,
re-cased or otherwise respelt id (base64 decoders skip whitespace and padding, ULID parsers
fold case) is BAD_USER_INPUT, never a second name for the same object.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from datastore import keys
from datastore.errors import InvalidInput
from graphql_api.execution.errors import bad_input


@dataclass(frozen=True, slots=True)
class GlobalId:
    type_name: str
    parts: tuple[str, ...]


def encode(type_name: str, *parts: str) -> str:
    raw = ":".join((type_name, *parts)).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(value: str, field: str = "id") -> GlobalId:
    """Parse a global id; a value that is not one, or not spelt as ``encode`` spells it, is BAD_USER_INPUT."""
    try:
        padded = value + "=" * (-len(value) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
    except (binascii.Error, UnicodeError, ValueError):
        raise bad_input(field, "is not a valid id") from None
    type_name, *parts = raw.split(":")
    if not type_name or not parts or not all(parts) or encode(type_name, *parts) != value:
        raise bad_input(field, "is not a valid id")
    return GlobalId(type_name, tuple(parts))


def parts_of(value: str, type_name: str, count: int, field: str = "id") -> tuple[str, ...] | None:
    """The ULIDs inside ``value`` when it is an id of ``type_name``, else None.

    An id of another type names nothing and resolves like one that does not exist. A value
    that is not an id at all, or an id of the type whose parts are not canonical ULIDs
    (a lower-case ULID would otherwise name the same object), is BAD_USER_INPUT.
    """
    return ulids_of(decode(value, field), type_name, count, field)


def ulids_of(decoded: GlobalId, type_name: str, count: int, field: str = "id") -> tuple[str, ...] | None:
    """``parts_of`` for an id already decoded."""
    if decoded.type_name != type_name or len(decoded.parts) != count:
        return None
    try:
        return tuple(keys.parse_ulid(part, field) for part in decoded.parts)
    except InvalidInput:
        raise bad_input(field, "is not a valid id") from None
