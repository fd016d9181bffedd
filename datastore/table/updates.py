"""UpdateExpressions made of typed actions, as PynamoDB's ``update(actions=[...])`` makes them.

A write names what it changes (``Set``, ``Remove``, ``Add``; a value may be another attribute,
``attribute``, or ``if_not_exists``) and ``build`` spells the expression: its clauses in one
order (SET, REMOVE, ADD), every attribute name and value behind a placeholder. The
placeholders are numbered (``#u0``, ``:u0``), so an attribute name that is a reserved word
needs no care at the call site, and the condition written beside the update keeps its own
(``#version``, ``:expected``) without meeting these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

AttributeValue = dict[str, Any]

# The placeholders of the update's own names and values (a condition's never start so).
NAME_PREFIX: Final = "#u"
VALUE_PREFIX: Final = ":u"


@dataclass(frozen=True, slots=True)
class Attribute:
    """The value another attribute of the item holds before the update (``#before = #status``)."""

    name: str


@dataclass(frozen=True, slots=True)
class IfNotExists:
    """The attribute's value where it has one, else ``default``."""

    name: str
    default: AttributeValue


Operand = AttributeValue | Attribute | IfNotExists


@dataclass(frozen=True, slots=True)
class Set:
    name: str
    value: Operand


@dataclass(frozen=True, slots=True)
class Remove:
    name: str


@dataclass(frozen=True, slots=True)
class Add:
    """Add a number to the attribute (it starts at 0 where missing), or elements to a set."""

    name: str
    value: AttributeValue


Action = Set | Remove | Add


def attribute(name: str) -> Attribute:
    return Attribute(name)


def if_not_exists(name: str, default: AttributeValue) -> IfNotExists:
    return IfNotExists(name, default)


@dataclass(frozen=True, slots=True)
class Update:
    """The UpdateItem (or transaction Update) parameters that ``build`` made."""

    expression: str
    names: dict[str, str]
    values: dict[str, AttributeValue]


def build(actions: Sequence[Action]) -> Update:
    """The expression applying ``actions``, in their order within each clause.

    An update that names no action, or one attribute twice, is refused here (DynamoDB would
    refuse it too, after a round trip): a ValueError, since it is the caller's mistake.
    """
    if not actions:
        raise ValueError("an update needs at least one action")
    targets = [action.name for action in actions]
    if len(set(targets)) != len(targets):
        raise ValueError(f"an update changes each attribute once: {targets}")
    spelling = _Spelling()
    sets = [f"{spelling.name(a.name)} = {spelling.operand(a.value)}" for a in actions if isinstance(a, Set)]
    removes = [spelling.name(a.name) for a in actions if isinstance(a, Remove)]
    adds = [f"{spelling.name(a.name)} {spelling.value(a.value)}" for a in actions if isinstance(a, Add)]
    clauses = [
        f"{verb} {', '.join(parts)}" for verb, parts in (("SET", sets), ("REMOVE", removes), ("ADD", adds)) if parts
    ]
    return Update(" ".join(clauses), spelling.names, spelling.values)


class _Spelling:
    """The placeholders of one expression: one per attribute name, one per value."""

    __slots__ = ("names", "values")

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, AttributeValue] = {}

    def name(self, attribute_name: str) -> str:
        for placeholder, known in self.names.items():
            if known == attribute_name:
                return placeholder
        placeholder = f"{NAME_PREFIX}{len(self.names)}"
        self.names[placeholder] = attribute_name
        return placeholder

    def value(self, value: AttributeValue) -> str:
        placeholder = f"{VALUE_PREFIX}{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def operand(self, operand: Operand) -> str:
        if isinstance(operand, Attribute):
            return self.name(operand.name)
        if isinstance(operand, IfNotExists):
            return f"if_not_exists({self.name(operand.name)}, {self.value(operand.default)})"
        return self.value(operand)
