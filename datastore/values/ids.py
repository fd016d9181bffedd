"""Ids: minted here, parsed once where they enter, typed by what they name.

Every id is a ULID spelt canonically: 26 upper-case Crockford base32 characters, as
``new_id`` writes them. An id enters the datastore typed (``EmployeeId``, ``DepartmentId``,
...), parsed once by ``parse`` at the edge that received it (a GraphQL global id, a token's
claims, a command-line option), which also says what a malformed one means there; the
datastore trusts a typed id and never checks it again. The types are NewTypes: they cost
nothing at run time (an id read from an item is the very string DynamoDB returned), and
mypy keeps an unparsed string out of every function that takes one.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Final, NewType, TypeVar

from ulid import ULID

OrgId = NewType("OrgId", str)
DepartmentId = NewType("DepartmentId", str)
EmployeeId = NewType("EmployeeId", str)
JobId = NewType("JobId", str)
ApplicationId = NewType("ApplicationId", str)
ApiKeyId = NewType("ApiKeyId", str)
SessionId = NewType("SessionId", str)

I = TypeVar("I", bound=str)  # noqa: E741  (the type of an id)

ULID_LENGTH: Final = 26
# The canonical spelling of a ULID: upper-case Crockford base32, at most 2**128 - 1.
_ULID: Final = re.compile(rf"[0-7][0-9A-HJKMNP-TV-Z]{{{ULID_LENGTH - 1}}}")
NOT_A_ULID: Final = "must be a 26-character ULID in upper case"
"""Why ``parse`` refused a value, for the edges that say so."""


def parse(kind: Callable[[str], I], value: object) -> I | None:
    """``value`` as an id of ``kind`` when it is a ULID spelt canonically, else None.

    Only the canonical spelling is accepted: a lower-case, padded or otherwise respelt id is
    refused rather than mapped, so each object has exactly one id.
    """
    if not isinstance(value, str) or _ULID.fullmatch(value) is None:
        return None
    return kind(value)


_last_id = 0
_last_id_lock = threading.Lock()


def new_id() -> str:
    """A new ULID, greater than every other this process made.

    Plain ULIDs only order by millisecond; two made in one millisecond compare at random, so
    "newest first" lists could swap them. Within a millisecond this takes the previous id
    plus one (the ULID spec's monotonic generation).
    """
    global _last_id
    candidate = ULID()
    with _last_id_lock:
        value = int(candidate)
        if candidate.milliseconds == _last_id >> 80 and value <= _last_id:
            value = _last_id + 1
        _last_id = value
    return str(ULID.from_int(value))


def new_id_at(at: datetime) -> str:
    """A ULID whose time part is ``at``, so ids minted in time order sort in time order."""
    return str(ULID.from_datetime(at))


def id_time(value: str) -> datetime:
    """When a ULID was minted (its time part), in UTC."""
    return ULID.from_str(value).datetime


def id_milliseconds(value: str) -> int:
    """A ULID's time part: milliseconds since the epoch."""
    return ULID.from_str(value).milliseconds


def id_ceiling(milliseconds: int) -> str:
    """The greatest ULID of the millisecond ``milliseconds``: every id minted later sorts
    after it, none minted then or earlier does."""
    return str(ULID.from_int(((max(milliseconds, 0) + 1) << 80) - 1))
