"""How a kind of item is declared, and the functions compiled from the declaration.

A ``Layout`` declares one kind of item, whole: its key templates (table and index), its
entity tag, its attributes and its version attribute. PynamoDB keeps a model in one class
and ElectroDB an entity in one schema the same way; ``datastore/kinds/layout.py`` holds every
kind of the table. Nothing else spells an attribute name or formats a key: everything that
writes, reads or looks up an item of the kind derives from its declaration.

Keys are templates over the value's fields, ordered, with fixed prefixes:
``"ORG#{org_id}"`` and ``"{hired_at:timestamp}#{emp_id}"``. A slot is a field of the value
(spelt by its form, ``FORMS``), a value ``derived`` from it, or an extra keyword the writer
is given (a name entry's ``prefix``). ``key_at``, ``partition`` and ``index_partition``
take the slots in the order they first appear, for the reads that start from ids.

The writer, the reader and the key builders are compiled from the declaration into one
plain function each, as ``dataclasses`` compiles ``__init__``: reading a hundred items is
on the hot path of every list, and straight-line code with no
per-attribute calls turns a wire item into an entity in a few microseconds, with no
intermediate copy. Items are built in DynamoDB's wire format directly; going through
boto3's TypeSerializer (and its Decimals) costs several milliseconds per hundred items and
buys nothing for the handful of attribute types used here.
"""

from __future__ import annotations

import dataclasses
import inspect
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from types import MemberDescriptorType
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar

from datastore.tenancy import keys
from datastore.tenancy.keys import Key
from datastore.values import names
from datastore.values.items import Item, parse_timestamp, timestamp

E = TypeVar("E")
# The attribute every item names its kind in (the layout's tag).
ENTITY: Final = "entity"

Encoding = Literal["S", "N", "timestamp", "enum", "words", "strings", "bool", "epoch", "map", "custom", "counted"]


def _epoch(value: datetime) -> str:
    return str(int(value.timestamp()))


def _from_epoch(value: str) -> datetime:
    return datetime.fromtimestamp(int(value), UTC)


def _document_slot(sha256: str) -> str:
    return sha256[: keys.DOCUMENT_SLOT_DIGITS]


def _number(value: int) -> str:
    return f"{value:04d}"


# How a slot's value is spelt in a key (``{hired_at:timestamp}``); a slot without a form is a string.
FORMS: Final[Mapping[str, Callable[[Any], str]]] = {
    "timestamp": timestamp,
    "folded": names.sort_form,
    "document_slot": _document_slot,
    "0000": _number,
}


@dataclass(frozen=True, slots=True)
class Attribute:
    """One field of the value stored as one attribute (or, for ``counted`` and ``inline``, several)."""

    name: str
    field: str
    encoding: Encoding
    optional: bool = False
    enum: type[Enum] | None = None
    # "strings": read as a frozenset rather than a sorted tuple.
    frozen: bool = False
    # "counted": the field from the whole item, and its counters from the field (seeding, results).
    derive: Callable[[Item], Any] | None = None
    spread: Callable[[Any], Item] | None = None
    # "custom": the wire value of the field's value, and back. "map" holds an item as it is.
    encode: Callable[[Any], Any] | None = None
    decode: Callable[[Any], Any] | None = None


def s(name: str, field: str, *, optional: bool = False) -> Attribute:
    return Attribute(name, field, "S", optional)


def n(name: str, field: str, *, optional: bool = False) -> Attribute:
    return Attribute(name, field, "N", optional)


def ts(name: str, field: str, *, optional: bool = False) -> Attribute:
    return Attribute(name, field, "timestamp", optional)


def enum(name: str, field: str, values: type[Enum], *, optional: bool = False) -> Attribute:
    return Attribute(name, field, "enum", optional, enum=values)


def words(name: str, field: str) -> Attribute:
    """A tuple of space-free strings, stored as one space-separated string (absent when empty).

    One text value rather than a string set: the audit trail records text values, and the
    order is kept as written.
    """
    return Attribute(name, field, "words", optional=True)


def strings(name: str, field: str, *, frozen: bool = False) -> Attribute:
    """A string set, written sorted and absent when empty (DynamoDB stores no empty set)."""
    return Attribute(name, field, "strings", optional=True, frozen=frozen)


def boolean(name: str, field: str) -> Attribute:
    return Attribute(name, field, "bool")


def epoch(name: str, field: str, *, optional: bool = False) -> Attribute:
    """A time stored as whole epoch seconds (the table's TTL attribute reads these)."""
    return Attribute(name, field, "epoch", optional)


def item_map(name: str, field: str) -> Attribute:
    """An item kept whole inside this one (an idempotency record's result)."""
    return Attribute(name, field, "map")


def custom(name: str, field: str, encode: Callable[[Any], Any], decode: Callable[[Any], Any]) -> Attribute:
    return Attribute(name, field, "custom", encode=encode, decode=decode)


def counted(name: str, field: str, derive: Callable[[Item], Any], spread: Callable[[Any], Item]) -> Attribute:
    """A field read from counters that other writes ``ADD`` to; ``name`` only labels it.

    The writer leaves it out, so no write of the entity itself (a versioned update of its
    attributes) can overwrite or roll back a counter; ``Layout.item_with_counters`` writes
    them (seeding, and a write's idempotency result).
    """
    return Attribute(name, field, "counted", derive=derive, spread=spread)


@dataclass(frozen=True, slots=True)
class Template:
    """A key spelt from fixed text and slots, in order: ``ORG#{org_id}#DEPT#{department_id}``."""

    text: str
    # (literal text, slot, form) triples as string.Formatter parses them.
    parts: tuple[tuple[str, str | None, str], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        parsed = tuple((text, slot, form or "") for text, slot, form, _ in string.Formatter().parse(self.text))
        for _text, slot, form in parsed:
            if slot is not None and form and form not in FORMS:
                raise ValueError(f"{self.text!r}: no form {form!r}")
        object.__setattr__(self, "parts", parsed)

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(slot for _text, slot, _form in self.parts if slot is not None)

    @property
    def prefix(self) -> str:
        """The fixed text before the first slot (a Query's sort-key prefix)."""
        return self.parts[0][0] if self.parts else ""


@dataclass(frozen=True)
class Layout(Generic[E]):
    """One kind of item: key templates, entity tag, attributes, version; checked on creation,
    its functions (``read``, ``item``, ``key_of``...) compiled at their first use.

    ``tag`` is what its items' ``entity`` attribute says (and the audit trail's entity type).
    ``key`` and ``index`` are (partition, sort) templates; ``index_when`` keeps a sparse
    index entry to the values it holds for. A layout without ``key`` describes an item kept
    inside another (``item_map``), untagged; ``inline`` puts another kind's whole item in it.
    Fields of ``entity`` that only a key holds are given to ``read`` by keyword (the caller
    built the key from them); a layout whose entity has fields stored nowhere is written,
    never read.
    """

    entity: type[E]
    tag: str
    key: tuple[str, str] | None
    attributes: tuple[Attribute, ...]
    index: tuple[str, str] | None = None
    index_when: Callable[[E], bool] | None = None
    derived: Mapping[str, Callable[[E], str]] = field(default_factory=dict)
    # The attribute a versioned write is conditioned on, if the kind has one.
    version: str | None = None
    inline: tuple[tuple[str, Layout[Any]], ...] = ()

    read: Callable[..., E] = field(init=False, repr=False)
    item: Callable[..., Item] = field(init=False, repr=False)
    key_of: Callable[..., Key] = field(init=False, repr=False)
    key_at: Callable[..., Key] = field(init=False, repr=False)
    partition: Callable[..., str] = field(init=False, repr=False)
    index_partition: Callable[..., str] = field(init=False, repr=False)
    sort_prefix: str = field(init=False, repr=False)
    slots: tuple[str, ...] = field(init=False, repr=False)
    names: Mapping[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        name = self.entity.__name__
        stored = [attribute.name for attribute in self.attributes]
        if len(set(stored)) != len(stored):
            raise ValueError(f"{name} declares an attribute twice")
        if self.version is not None and self.version not in stored:
            raise ValueError(f"{name}'s version {self.version!r} is not one of its attributes")
        key = None if self.key is None else (Template(self.key[0]), Template(self.key[1]))
        index = None if self.index is None else (Template(self.index[0]), Template(self.index[1]))
        fields = [f.name for f in dataclasses.fields(self.entity)]  # type: ignore[arg-type]
        templates = [t for pair in (key, index) if pair is not None for t in pair]
        slots = list(dict.fromkeys(slot for template in templates for slot in template.slots))
        extra = [slot for slot in slots if slot not in fields and slot not in self.derived]
        self._set("slots", tuple(dict.fromkeys(s for t in (key or ()) for s in t.slots)))
        self._set("names", {attribute.field: attribute.name for attribute in self.attributes})
        self._set("sort_prefix", "" if key is None else key[1].prefix)
        # What the compilers need, for __getattr__: a start compiles only the functions of the
        # kinds its first requests use, not all 39 kinds' six (about 1 ms a kind).
        self._set("_shape", _Shape(key, index, fields, slots, extra))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    if not TYPE_CHECKING:  # for mypy every attribute is declared above; none is made up

        def __getattr__(self, name: str) -> Any:
            """Only for an attribute not set yet: a compiled function, compiled now and kept on
            the instance, where every later use finds it without coming here."""
            compiler = _COMPILERS.get(name)
            if compiler is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            compiled = compiler(self, self._shape)
            self._set(name, compiled)
            return compiled

    def item_with_counters(self, value: E, **extra: Any) -> Item:
        """``item`` with the counters of its counted fields, as seeding and results store them."""
        found = self.item(value, **extra)
        for attribute in self.attributes:
            if attribute.encoding == "counted" and attribute.spread is not None:
                found.update(attribute.spread(getattr(value, attribute.field)))
        return found

    @property
    def optional_names(self) -> tuple[str, ...]:
        """The attributes an item may lack (a write that replaces the item removes them)."""
        return tuple(attribute.name for attribute in self.attributes if attribute.optional)

    @property
    def index_names(self) -> tuple[str, ...]:
        return () if self.index is None else (keys.GSI1PK, keys.GSI1SK)


# --- compilers: source built from the declarations only, never from input ----------------------


@dataclass(frozen=True, slots=True)
class _Shape:
    """A layout's parsed declarations, as its compilers take them."""

    key: tuple[Template, Template] | None
    index: tuple[Template, Template] | None
    fields: list[str]  # the entity's fields
    slots: list[str]  # every slot of its key and index templates
    extra: list[str]  # the slots that are neither fields nor derived: given to ``item`` and ``key_of``


def _partition_of(template: tuple[Template, Template] | None) -> Template | None:
    return None if template is None else template[0]


# Each compiled function of a Layout, by attribute name (Layout.__getattr__).
_COMPILERS: Final[dict[str, Callable[[Layout[Any], _Shape], Callable[..., Any]]]] = {
    "read": lambda layout, shape: _compile_reader(layout, shape.fields, shape.slots),
    "item": lambda layout, shape: _compile_writer(layout, shape.key, shape.index, shape.extra),
    "key_of": lambda layout, shape: _compile_key_of(layout, shape.key, shape.extra),
    "key_at": lambda layout, shape: _compile_key_at(layout.entity.__name__, shape.key),
    "partition": lambda layout, shape: _compile_template_at(layout.entity.__name__, _partition_of(shape.key)),
    "index_partition": lambda layout, shape: _compile_template_at(layout.entity.__name__, _partition_of(shape.index)),
}


def _exec(source: str, namespace: dict[str, Any], function: str, qualname: str) -> Any:
    exec(source, namespace)  # source built from the declarations only, never from input
    compiled = namespace[function]
    compiled.__qualname__ = qualname
    return compiled


def _spelt(template: Template, slot_value: Callable[[str], str], namespace: dict[str, Any]) -> str:
    """An expression concatenating ``template``'s text and its slots' spellings."""
    pieces: list[str] = []
    for text, slot, form in template.parts:
        if text:
            pieces.append(repr(text))
        if slot is not None:
            value = slot_value(slot)
            if form:
                namespace[f"_form_{form}"] = FORMS[form]
                value = f"_form_{form}({value})"
            pieces.append(value)
    return " + ".join(pieces) or "''"


def _wire(attribute: Attribute, value: str, namespace: dict[str, Any], index: int) -> str:
    """The wire value of ``attribute`` for the Python expression ``value``."""
    encoding = attribute.encoding
    if encoding == "S":
        return f'{{"S": {value}}}'
    if encoding == "N":
        return f'{{"N": str({value})}}'
    if encoding == "timestamp":
        namespace["_timestamp"] = timestamp
        return f'{{"S": _timestamp({value})}}'
    if encoding == "enum":
        return f'{{"S": {value}.value}}'
    if encoding == "words":
        return f'{{"S": " ".join({value})}}'
    if encoding == "strings":
        return f'{{"SS": sorted({value})}}'
    if encoding == "bool":
        return f'{{"BOOL": {value}}}'
    if encoding == "epoch":
        namespace["_epoch"] = _epoch
        return f'{{"N": _epoch({value})}}'
    if encoding == "map":
        return f'{{"M": {value}}}'
    namespace[f"_encode{index}"] = attribute.encode
    return f"_encode{index}({value})"


def _required(value: Any, slot: str) -> Any:
    if value is None:
        raise ValueError(f"no {slot}: the key cannot be spelt")
    return value


def _slot_source(layout: Layout[Any], extra: list[str], namespace: dict[str, Any]) -> Callable[[str], str]:
    """How the writer and ``key_of`` get each slot: derived, given, or a field (checked when it may be None)."""
    optional = {f.name for f in dataclasses.fields(layout.entity) if "None" in str(f.type)}
    namespace["_required"] = _required

    def slot_value(slot: str) -> str:
        if slot in layout.derived:
            return f"_slot_{slot}"
        if slot in extra:
            return slot
        return f"_required(value.{slot}, {slot!r})" if slot in optional else f"value.{slot}"

    return slot_value


def _compile_writer(
    layout: Layout[Any],
    key: tuple[Template, Template] | None,
    index: tuple[Template, Template] | None,
    extra: list[str],
) -> Callable[..., Item]:
    namespace: dict[str, Any] = {}
    lines: list[str] = []
    for slot, derive in layout.derived.items():
        namespace[f"_derive_{slot}"] = derive
        lines.append(f"    _slot_{slot} = _derive_{slot}(value)")

    slot_value = _slot_source(layout, extra, namespace)
    entries: list[str] = []
    if key is not None:
        entries.append(f'{keys.PK!r}: {{"S": {_spelt(key[0], slot_value, namespace)}}}')
        entries.append(f'{keys.SK!r}: {{"S": {_spelt(key[1], slot_value, namespace)}}}')
    index_values: list[tuple[str, str]] = []
    if index is not None:
        index_values.append((keys.GSI1PK, f'{{"S": {_spelt(index[0], slot_value, namespace)}}}'))
        index_values.append((keys.GSI1SK, f'{{"S": {_spelt(index[1], slot_value, namespace)}}}'))
        if layout.index_when is None:
            entries += [f"{name!r}: {wire}" for name, wire in index_values]
    if key is not None:  # an item kept inside another is not tagged
        entries.append(f'{ENTITY!r}: {{"S": {layout.tag!r}}}')
    optional: list[str] = []
    for number, attribute in enumerate(layout.attributes):
        if attribute.encoding == "counted":
            continue  # written only by ADD, elsewhere (see ``counted``)
        value = f"value.{attribute.field}"
        wire = _wire(attribute, value, namespace, number)
        if attribute.encoding in ("words", "strings"):
            optional.append(f"    if {value}:\n        item[{attribute.name!r}] = {wire}")
        elif attribute.optional:
            optional.append(f"    if {value} is not None:\n        item[{attribute.name!r}] = {wire}")
        else:
            entries.append(f"{attribute.name!r}: {wire}")
    lines.append(f"    item = {{{', '.join(entries)}}}")
    for number, (inline_field, inner) in enumerate(layout.inline):
        namespace[f"_inline{number}"] = inner.item
        lines.append(f"    item.update(_inline{number}(value.{inline_field}))")
    lines += optional
    if index is not None and layout.index_when is not None:
        namespace["_index_when"] = layout.index_when
        lines.append("    if _index_when(value):")
        lines += [f"        item[{name!r}] = {wire}" for name, wire in index_values]
    lines.append("    return item")
    parameters = "".join(f", {slot}" for slot in extra)
    keyword = ", *" if extra else ""
    source = f"def item(value{keyword}{parameters}):\n" + "\n".join(lines) + "\n"
    return _exec(source, namespace, "item", f"{layout.entity.__name__}Layout.item")  # type: ignore[no-any-return]


def _read_expression(attribute: Attribute, namespace: dict[str, Any], index: int) -> str:
    value = f"_v{index}" if attribute.optional else f"item[{attribute.name!r}]"
    encoding = attribute.encoding
    if encoding == "S":
        expression = f'{value}["S"]'
    elif encoding == "N":
        expression = f'int({value}["N"])'
    elif encoding == "timestamp":
        namespace["_parse"] = parse_timestamp
        expression = f'_parse({value}["S"])'
    elif encoding == "words":
        expression = f'tuple({value}["S"].split())'
    elif encoding == "strings":
        expression = f'frozenset({value}["SS"])' if attribute.frozen else f'tuple(sorted({value}["SS"]))'
    elif encoding == "bool":
        expression = f'{value}["BOOL"]'
    elif encoding == "epoch":
        namespace["_from_epoch"] = _from_epoch
        expression = f'_from_epoch({value}["N"])'
    elif encoding == "map":
        expression = f'{value}["M"]'
    elif encoding == "custom":
        namespace[f"_decode{index}"] = attribute.decode
        expression = f"_decode{index}({value})"
    elif encoding == "counted":
        namespace[f"_derive{index}"] = attribute.derive
        expression = f"_derive{index}(item)"
    else:
        assert attribute.enum is not None
        # A dict lookup, not Enum(value): the members by value, built once.
        namespace[f"_members{index}"] = {member.value: member for member in attribute.enum}
        expression = f'_members{index}[{value}["S"]]'
    if attribute.optional:
        missing = "frozenset()" if attribute.frozen else "()" if encoding in ("words", "strings") else "None"
        expression = f"({missing} if ({value} := item.get({attribute.name!r})) is None else {expression})"
    return expression


def _compile_reader(layout: Layout[Any], fields: list[str], slots: list[str]) -> Callable[..., Any]:
    name = layout.entity.__name__
    namespace: dict[str, Any] = {"_entity": layout.entity}
    arguments = [
        f"{attribute.field}={_read_expression(attribute, namespace, number)}"
        for number, attribute in enumerate(layout.attributes)
    ]
    for number, (inline_field, inner) in enumerate(layout.inline):
        namespace[f"_read_inline{number}"] = inner.read
        arguments.append(f"{inline_field}=_read_inline{number}(item)")
    covered = {attribute.field for attribute in layout.attributes} | {inline for inline, _ in layout.inline}
    defaults = {
        f.name
        for f in dataclasses.fields(layout.entity)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }
    given = [f for f in fields if f not in covered and f in slots]
    unreadable = [f for f in fields if f not in covered and f not in slots and f not in defaults]
    if unreadable:

        def write_only(_item: Item, **_given: Any) -> Any:
            raise TypeError(f"{layout.tag} items are written, never read ({', '.join(unreadable)} stored nowhere)")

        return write_only
    arguments += [f"{f}={f}" for f in given]
    parameters = "".join(f", {f}" for f in given)
    keyword = ", *" if given else ""
    setters = _slot_setters(layout.entity)
    if setters is None:
        body = f"    return _entity({', '.join(arguments)})\n"
    else:
        body = _fill_slots(layout.entity, arguments, setters, namespace)
    source = f"def read(item{keyword}{parameters}):\n{body}"
    return _exec(source, namespace, "read", f"{name}Layout.read")  # type: ignore[no-any-return]


def _slot_setters(entity: type[Any]) -> dict[str, Callable[[Any, Any], None]] | None:
    """Each field's slot setter when ``entity``'s ``__init__`` does nothing but set its fields, else None.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its
    own ``__setattr__`` refuses): 1.2 us for an employee's twelve fields, against 0.46 us
    for the slots' own setters on an instance made with ``object.__new__``, and a directory
    page reads a thousand (``python -m bench.profile``). Only for a plain dataclass with
    slots: a ``__post_init__``, a field left out of ``__init__`` or an ``__init__`` that does not
    take exactly the fields keeps the call (dataclasses' public API only: ``fields``, the
    signature).
    """
    if not dataclasses.is_dataclass(entity) or hasattr(entity, "__post_init__"):
        return None
    fields = dataclasses.fields(entity)
    # An __init__ written by hand (or none: ``init=False``) would not take exactly the fields.
    if list(inspect.signature(entity).parameters) != [f.name for f in fields]:
        return None
    setters: dict[str, Callable[[Any, Any], None]] = {}
    for f in fields:
        member = entity.__dict__.get(f.name)
        if not f.init or not isinstance(member, MemberDescriptorType):
            return None
        setters[f.name] = member.__set__
    return setters


def _fill_slots(
    entity: type[Any], arguments: list[str], setters: dict[str, Callable[[Any, Any], None]], namespace: dict[str, Any]
) -> str:
    """``read``'s body for a slots dataclass: a bare instance, each slot set as ``__init__`` would."""
    namespace["_new"] = object.__new__
    lines = ["    value = _new(_entity)"]
    named = {argument.split("=", 1)[0]: argument.split("=", 1)[1] for argument in arguments}
    for f in dataclasses.fields(entity):
        namespace[f"_set_{f.name}"] = setters[f.name]
        if f.name in named:
            expression = named[f.name]
        elif f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            expression = f"_default_{f.name}"
        else:
            namespace[f"_factory_{f.name}"] = f.default_factory
            expression = f"_factory_{f.name}()"
        lines.append(f"    _set_{f.name}(value, {expression})")
    lines.append("    return value")
    return "\n".join(lines) + "\n"


def _compile_key_of(layout: Layout[Any], key: tuple[Template, Template] | None, extra: list[str]) -> Callable[..., Key]:
    name = layout.entity.__name__
    if key is None:
        return _no_key(name)
    namespace: dict[str, Any] = {"_Key": Key}
    lines: list[str] = []
    for slot, derive in layout.derived.items():
        namespace[f"_derive_{slot}"] = derive
        lines.append(f"    _slot_{slot} = _derive_{slot}(value)")

    slot_value = _slot_source(layout, extra, namespace)
    pk, sk = (_spelt(template, slot_value, namespace) for template in key)
    used = [slot for slot in extra if slot in key[0].slots or slot in key[1].slots]
    keyword = ", *" if used else ""
    source = f"def key_of(value{keyword}{''.join(f', {slot}' for slot in used)}):\n"
    source += "".join(f"{line}\n" for line in lines) + f"    return _Key({pk}, {sk})\n"
    return _exec(source, namespace, "key_of", f"{name}Layout.key_of")  # type: ignore[no-any-return]


def _compile_key_at(name: str, key: tuple[Template, Template] | None) -> Callable[..., Key]:
    if key is None:
        return _no_key(name)
    namespace: dict[str, Any] = {"_Key": Key}
    slots = list(dict.fromkeys((*key[0].slots, *key[1].slots)))
    pk, sk = (_spelt(template, lambda slot: slot, namespace) for template in key)
    source = f"def key_at({', '.join(slots)}):\n    return _Key({pk}, {sk})\n"
    return _exec(source, namespace, "key_at", f"{name}Layout.key_at")  # type: ignore[no-any-return]


def _compile_template_at(name: str, template: Template | None) -> Callable[..., str]:
    if template is None:
        return _no_key(name)
    namespace: dict[str, Any] = {}
    spelt = _spelt(template, lambda slot: slot, namespace)
    source = f"def at({', '.join(dict.fromkeys(template.slots))}):\n    return {spelt}\n"
    return _exec(source, namespace, "at", f"{name}Layout.partition")  # type: ignore[no-any-return]


def _no_key(name: str) -> Callable[..., Any]:
    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise TypeError(f"{name} has no such key")

    return refused
