"""Stream records as the reader hands them on, and the typed change events they decode into.

A ``StreamRecord`` is one record of the table's stream, kept as DynamoDB wrote it (its keys
and both images in the wire format) with where it was read (shard, sequence number); it
encodes to bytes and back for the fan-out to workers (datastore/feed/fanout.py). Its kind (the
``entity`` tag every item carries) and its organisation (from its partition key, never from
its attributes) are read without decoding the images, so a worker routes it first.

``decode`` turns it into a ``ChangeEvent`` through the item layouts (datastore/kinds/layout.py):
the kind, INSERT/MODIFY/REMOVE, the organisation, the item's key, the entity before and after
(``old``, ``new``; an insert has no ``old``, a removal no ``new``), and the names of the
attributes whose value changed. Fields a kind keeps only in its key (an email pointer's email,
a migration progress item's organisation) are read back from the key.
"""

from __future__ import annotations

import inspect
import re
import string
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

import orjson

from datastore.kinds import layout
from datastore.kinds.model import ENTITY, Layout
from datastore.tenancy import keys
from datastore.tenancy.keys import Key
from datastore.values.ids import OrgId
from datastore.values.items import Item

# Attributes that are the item's place, not its data: never reported as changed.
_PLACE: Final = frozenset({keys.PK, keys.SK, keys.GSI1PK, keys.GSI1SK})


class ChangeName(StrEnum):
    INSERT = "INSERT"
    MODIFY = "MODIFY"
    REMOVE = "REMOVE"


class Undecodable(Exception):
    """A record whose kind no layout declares, or whose image its layout cannot read."""


@dataclass(frozen=True, slots=True)
class StreamRecord:
    name: ChangeName
    keys: Item
    old_image: Item | None
    new_image: Item | None
    shard_id: str
    sequence_number: str
    # When DynamoDB wrote it, to the second (the stream's precision).
    approximate_at: datetime

    @classmethod
    def of(cls, raw: dict[str, Any], shard_id: str) -> StreamRecord:
        """A record as GetRecords returns it (the low-level client: images in the wire format)."""
        body = raw["dynamodb"]
        at = body.get("ApproximateCreationDateTime")
        if isinstance(at, int | float):
            at = datetime.fromtimestamp(at, UTC)
        return cls(
            name=ChangeName(raw["eventName"]),
            keys=body["Keys"],
            old_image=body.get("OldImage"),
            new_image=body.get("NewImage"),
            shard_id=shard_id,
            sequence_number=body["SequenceNumber"],
            approximate_at=at if isinstance(at, datetime) else datetime.now(UTC),
        )

    @property
    def partition_key(self) -> str:
        return str(self.keys.get(keys.PK, {}).get("S", ""))

    @property
    def org_id(self) -> str | None:
        """The organisation whose partition the item is in; None outside every organisation."""
        return keys.org_id_of(self.partition_key)

    @property
    def kind(self) -> str | None:
        """The item's kind (its ``entity`` tag), from whichever image it has."""
        image = self.new_image or self.old_image or {}
        tag = image.get(ENTITY, {}).get("S")
        return tag if isinstance(tag, str) else None

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "n": self.name.value,
                "k": self.keys,
                "o": self.old_image,
                "i": self.new_image,
                "s": self.shard_id,
                "q": self.sequence_number,
                "t": self.approximate_at.timestamp(),
            }
        )

    @classmethod
    def decode(cls, body: bytes) -> StreamRecord:
        data = orjson.loads(body)
        return cls(
            name=ChangeName(data["n"]),
            keys=data["k"],
            old_image=data["o"],
            new_image=data["i"],
            shard_id=data["s"],
            sequence_number=data["q"],
            approximate_at=datetime.fromtimestamp(data["t"], UTC),
        )


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change of one item, typed: ``old`` and ``new`` are entities of the kind's layout."""

    kind: str
    name: ChangeName
    org_id: OrgId | None
    key: Key
    old: Any | None
    new: Any | None
    # Attributes whose value differs between the images (all of them for an insert or removal).
    changed: tuple[str, ...]
    shard_id: str
    sequence_number: str
    approximate_at: datetime


_LAYOUTS: Final[dict[str, Layout[Any]]] = {kind.tag: kind for kind in layout.KINDS}


def layout_of(kind: str) -> Layout[Any] | None:
    return _LAYOUTS.get(kind)


def decode(record: StreamRecord) -> ChangeEvent:
    """``record`` typed through its kind's layout; Undecodable when no layout reads it."""
    kind = record.kind
    declared = None if kind is None else _LAYOUTS.get(kind)
    if kind is None or declared is None:
        raise Undecodable(f"no layout declares the kind of the item at {record.partition_key!r}")
    key = Key(record.partition_key, str(record.keys.get(keys.SK, {}).get("S", "")))
    org_id = record.org_id
    return ChangeEvent(
        kind=kind,
        name=record.name,
        org_id=None if org_id is None else OrgId(org_id),
        key=key,
        old=None if record.old_image is None else _read(declared, record.old_image, key),
        new=None if record.new_image is None else _read(declared, record.new_image, key),
        changed=_changed(record.old_image or {}, record.new_image or {}),
        shard_id=record.shard_id,
        sequence_number=record.sequence_number,
        approximate_at=record.approximate_at,
    )


def _changed(old: Item, new: Item) -> tuple[str, ...]:
    names = (set(old) | set(new)) - _PLACE
    return tuple(sorted(name for name in names if old.get(name) != new.get(name)))


def _read(declared: Layout[Any], image: Item, key: Key) -> Any:
    given = _given_fields(declared)
    try:
        if not given:
            return declared.read(image)
        return declared.read(image, **_from_key(declared, key, given))
    except (KeyError, TypeError, ValueError) as error:
        raise Undecodable(f"a {declared.tag} item that its layout cannot read: {error}") from None


def _given_fields(declared: Layout[Any]) -> tuple[str, ...]:
    """The fields ``declared.read`` takes by keyword: those only the item's key holds."""
    parameters = inspect.signature(declared.read).parameters.values()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _from_key(declared: Layout[Any], key: Key, given: tuple[str, ...]) -> dict[str, str]:
    """The ``given`` fields spelt out of ``key`` by the kind's key templates (as written, unformatted)."""
    if declared.key is None:
        raise Undecodable(f"{declared.tag} has no key")
    found: dict[str, str] = {}
    for template, value in zip(declared.key, (key.pk, key.sk), strict=True):
        match = _pattern(template).fullmatch(value)
        if match is None:
            raise Undecodable(f"{value!r} is not a {declared.tag} key")
        found.update({slot: text for slot, text in match.groupdict().items() if slot in given})
    missing = [field for field in given if field not in found]
    if missing:
        raise Undecodable(f"{declared.tag}'s key does not hold {', '.join(missing)}")
    return found


def _pattern(template: str) -> re.Pattern[str]:
    pieces: list[str] = []
    seen: set[str] = set()
    for text, slot, form, _conversion in string.Formatter().parse(template):
        pieces.append(re.escape(text))
        if slot is None:
            continue
        if slot in seen or form:
            pieces.append(".*?")  # a repeated slot, or one spelt in a form that is not read back
        else:
            pieces.append(f"(?P<{slot}>.*?)")
            seen.add(slot)
    return re.compile("".join(pieces))
