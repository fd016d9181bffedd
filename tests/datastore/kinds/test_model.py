"""model: a kind declared once, and the writer, reader and key builders compiled from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

import pytest

from datastore.kinds import model
from datastore.kinds.model import Layout, Template
from datastore.tenancy.keys import Key

WHEN = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Thing:
    owner: str
    thing_id: str
    name: str
    colour: Colour
    made_at: datetime
    nickname: str | None = None
    tags: tuple[str, ...] = ()
    version: int = 1


THING = Layout(
    Thing,
    tag="Thing",
    key=("OWNER#{owner}", "THING#{thing_id}"),
    index=("OWNER#{owner}#BY_TIME", "{made_at:timestamp}#{thing_id}"),
    index_when=lambda thing: thing.colour is Colour.RED,
    attributes=(
        model.s("owner", "owner"),
        model.s("thingId", "thing_id"),
        model.s("name", "name"),
        model.enum("colour", "colour", Colour),
        model.ts("madeAt", "made_at"),
        model.s("nickname", "nickname", optional=True),
        model.words("tags", "tags"),
        model.n("version", "version"),
    ),
    version="version",
)


def test_item__keys_tag_and_attributes_in_one_item() -> None:
    item = THING.item(Thing("o1", "t1", "Box", Colour.BLUE, WHEN))
    assert item == {
        "PK": {"S": "OWNER#o1"},
        "SK": {"S": "THING#t1"},
        "entity": {"S": "Thing"},
        "owner": {"S": "o1"},
        "thingId": {"S": "t1"},
        "name": {"S": "Box"},
        "colour": {"S": "blue"},
        "madeAt": {"S": "2024-05-06T07:08:09.123Z"},
        "version": {"N": "1"},
    }


def test_item__sparse_index_only_when_declared_so() -> None:
    red = THING.item(Thing("o1", "t1", "Box", Colour.RED, WHEN, nickname="B", tags=("a", "b")))
    assert red["GSI1PK"] == {"S": "OWNER#o1#BY_TIME"}
    assert red["GSI1SK"] == {"S": "2024-05-06T07:08:09.123Z#t1"}
    assert red["nickname"] == {"S": "B"} and red["tags"] == {"S": "a b"}
    assert THING.read(red) == Thing("o1", "t1", "Box", Colour.RED, WHEN, nickname="B", tags=("a", "b"))


def test_keys__from_a_value_from_ids_and_for_queries() -> None:
    thing = Thing("o1", "t1", "Box", Colour.RED, WHEN)
    assert THING.key_of(thing) == THING.key_at("o1", "t1") == Key("OWNER#o1", "THING#t1")
    assert THING.slots == ("owner", "thing_id")
    assert THING.partition("o1") == "OWNER#o1"
    assert THING.index_partition("o1") == "OWNER#o1#BY_TIME"
    assert THING.sort_prefix == "THING#"
    assert THING.names["made_at"] == "madeAt"
    assert THING.optional_names == ("nickname", "tags")
    assert THING.index_names == ("GSI1PK", "GSI1SK")


@dataclass(frozen=True)
class Entry:
    owner: str
    entry_id: str
    at: datetime


ENTRY = Layout(
    Entry,
    tag="Entry",
    key=("OWNER#{owner}#{month}#{shelf}", "ENTRY#{entry_id}"),
    derived={"month": lambda entry: entry.at.strftime("%Y-%m")},
    attributes=(model.s("entryId", "entry_id"), model.ts("at", "at")),
)


def test_slots__derived_given_by_keyword_and_key_only_fields_given_to_read() -> None:
    entry = Entry("o1", "e1", WHEN)
    item = ENTRY.item(entry, shelf="top")
    assert item["PK"] == {"S": "OWNER#o1#2024-05#top"}
    assert ENTRY.key_of(entry, shelf="top") == ENTRY.key_at("o1", "2024-05", "top", "e1")
    # ``owner`` is in the key only: the reader is told it, as the caller built the key from it.
    assert ENTRY.read(item, owner="o1") == entry


def test_write_only_kind__read_refused() -> None:
    @dataclass(frozen=True)
    class Marker:
        owner: str
        stored_nowhere: str

    marker = Layout(Marker, tag="Marker", key=("M#{owner}", "#M"), attributes=())
    assert marker.item(Marker("o", "x")) == {"PK": {"S": "M#o"}, "SK": {"S": "#M"}, "entity": {"S": "Marker"}}
    with pytest.raises(TypeError, match="Marker items are written, never read"):
        marker.read({})


@dataclass(frozen=True)
class Record:
    stamped: datetime
    done: frozenset[str] = frozenset()
    names: tuple[str, ...] = ()
    flag: bool = False
    kept: dict[str, object] = field(default_factory=dict)


RECORD = Layout(
    Record,
    tag="Record",
    key=("R", "#R"),
    attributes=(
        model.epoch("stamped", "stamped"),
        model.strings("done", "done", frozen=True),
        model.strings("names", "names"),
        model.boolean("flag", "flag"),
        model.item_map("kept", "kept"),
    ),
)


def test_other_encodings__sets_sorted_and_absent_when_empty_epoch_bool_map() -> None:
    second = WHEN.replace(microsecond=0)
    record = Record(second, frozenset({"b", "a"}), ("y", "x"), True, {"k": {"S": "v"}})
    item = RECORD.item(record)
    assert item["done"] == {"SS": ["a", "b"]} and item["names"] == {"SS": ["x", "y"]}
    assert item["stamped"] == {"N": str(int(WHEN.timestamp()))}
    assert item["flag"] == {"BOOL": True} and item["kept"] == {"M": {"k": {"S": "v"}}}
    assert RECORD.read(item) == Record(
        WHEN.replace(microsecond=0), frozenset({"a", "b"}), ("x", "y"), True, record.kept
    )
    bare = RECORD.item(Record(WHEN.replace(microsecond=0)))
    assert "done" not in bare and "names" not in bare
    assert RECORD.read(bare) == Record(WHEN.replace(microsecond=0))


def test_inline__another_kinds_whole_item_inside_one_without_keys() -> None:
    @dataclass(frozen=True)
    class Outcome:
        thing: Thing
        note: str | None

    outcome = Layout(
        Outcome,
        tag="Outcome",
        key=None,
        inline=(("thing", THING),),
        attributes=(model.s("note", "note", optional=True),),
    )
    thing = Thing("o1", "t1", "Box", Colour.BLUE, WHEN)
    item = outcome.item(Outcome(thing, "moved"))
    assert item == {**THING.item(thing), "note": {"S": "moved"}}
    assert outcome.read(item) == Outcome(thing, "moved")
    with pytest.raises(TypeError, match="no such key"):
        outcome.key_at("o1")


@dataclass(frozen=True)
class Plain:
    name: str
    version: int


def test_declaration__attribute_twice__refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        Layout(Plain, "Plain", ("P", "#P"), (model.s("name", "name"), model.s("name", "name")))


def test_declaration__version_not_an_attribute__refused() -> None:
    with pytest.raises(ValueError, match="version"):
        Layout(Plain, "Plain", ("P", "#P"), (model.s("name", "name"),), version="version")


def test_template__unknown_form__refused() -> None:
    with pytest.raises(ValueError, match="no form 'shouting'"):
        Template("P#{name:shouting}")


@dataclass(frozen=True, slots=True)
class Slotted:
    owner: str
    slot_id: str
    name: str | None
    made_at: datetime
    tags: tuple[str, ...] = ()
    kept: dict[str, object] = field(default_factory=dict)


SLOTTED = Layout(
    Slotted,
    tag="Slotted",
    key=("OWNER#{owner}", "SLOT#{slot_id}"),
    attributes=(model.s("name", "name", optional=True), model.ts("madeAt", "made_at"), model.words("tags", "tags")),
)


def test_read__slots_dataclass__filled_slot_by_slot_as_its_init_would() -> None:
    """A frozen slots dataclass is read without its ``__init__`` (each slot's own setter on a
    bare instance): the same value, defaults and default factories included, a fresh
    factory value each time."""
    for value in (Slotted("o", "s1", "Ann", WHEN, ("a", "b")), Slotted("o", "s2", None, WHEN)):
        read = SLOTTED.read(SLOTTED.item(value), owner="o", slot_id=value.slot_id)
        assert read == value and type(read) is Slotted
    first = SLOTTED.read(SLOTTED.item(Slotted("o", "s", None, WHEN)), owner="o", slot_id="s")
    second = SLOTTED.read(SLOTTED.item(Slotted("o", "s", None, WHEN)), owner="o", slot_id="s")
    assert first.kept == {} and first.kept is not second.kept
    with pytest.raises(KeyError):  # a required attribute missing fails as the call did
        SLOTTED.read({}, owner="o", slot_id="s")
    assert "_new" in SLOTTED.read.__globals__  # the slot-by-slot reader, not the call


def test_read__dataclass_with_post_init__keeps_the_call() -> None:
    @dataclass(frozen=True, slots=True)
    class Checked:
        owner: str
        name: str

        def __post_init__(self) -> None:
            if not self.name:
                raise ValueError("no name")

    checked = Layout(Checked, tag="Checked", key=("C#{owner}", "#C"), attributes=(model.s("name", "name"),))
    assert checked.read({"name": {"S": "x"}}, owner="o") == Checked("o", "x")
    with pytest.raises(ValueError, match="no name"):
        checked.read({"name": {"S": ""}}, owner="o")


def test_read__slots_class_with_its_own_init__keeps_the_call() -> None:
    @dataclass(frozen=True, slots=True, init=False)
    class Trimmed:
        owner: str
        name: str

        def __init__(self, owner: str, name: str, extra: str = "") -> None:
            object.__setattr__(self, "owner", owner)
            object.__setattr__(self, "name", name.strip())

    trimmed = Layout(Trimmed, tag="Trimmed", key=("T#{owner}", "#T"), attributes=(model.s("name", "name"),))
    assert trimmed.read({"name": {"S": " x "}}, owner="o").name == "x"


def fresh_thing_layout() -> Layout[Thing]:
    """THING declared again: a layout none of the tests above has used."""
    return Layout(
        THING.entity, THING.tag, THING.key, THING.attributes, THING.index, THING.index_when, version="version"
    )


def test_compiled_functions__compiled_at_first_use_then_kept() -> None:
    """Declaring a kind compiles nothing; each function is compiled when first used and kept on
    the layout, where later uses find it directly."""
    layout = fresh_thing_layout()
    compiled = ("read", "item", "key_of", "key_at", "partition", "index_partition")
    assert [name for name in compiled if name in vars(layout)] == []

    thing = Thing("o1", "t1", "Box", Colour.RED, WHEN)
    item = layout.item(thing)

    assert [name for name in compiled if name in vars(layout)] == ["item"]
    assert layout.item is layout.item
    assert item == THING.item(thing)
    assert layout.read(item) == thing
    assert layout.key_of(thing) == layout.key_at("o1", "t1") == Key("OWNER#o1", "THING#t1")
    assert layout.partition("o1") == "OWNER#o1"
    assert layout.index_partition("o1") == "OWNER#o1#BY_TIME"
    assert [name for name in compiled if name not in vars(layout)] == []


def test_compiled_functions__a_name_not_declared__attribute_error() -> None:
    name = "reed"  # a misspelt read
    with pytest.raises(AttributeError, match="no attribute 'reed'"):
        getattr(fresh_thing_layout(), name)
