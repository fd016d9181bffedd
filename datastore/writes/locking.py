"""Optimistic locking: a write conditioned on the version its entity was read at.

Every entity whose layout declares a version (``datastore.kinds.layout``) is written this way:
read consistently and check the version the caller expected (``checked``; the write envelope's
``Write.current`` does both), write under ``version = <the version read>``. A write that loses
the race changes nothing and becomes StaleVersion, or NotFound when the item is gone.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from datastore.errors import DatastoreError, NotFound, StaleVersion
from datastore.kinds.model import Layout
from datastore.table import transact, updates
from datastore.tenancy import keys
from datastore.values.items import Item


class Versioned(Protocol):
    @property
    def version(self) -> int: ...


V = TypeVar("V", bound=Versioned)


def _version_of(layout: Layout[Any]) -> str:
    if layout.version is None:
        raise ValueError(f"{layout.entity.__name__} has no version attribute")
    return layout.version


def stale(layout: Layout[Any]) -> transact.FailureHandler:
    """A failed version condition: the item is gone, or someone else changed it."""
    entity, version = layout.entity, _version_of(layout)

    def handler(old: Item | None) -> DatastoreError:
        if old is None:
            return NotFound(entity)
        return _changed(entity, int(old[version]["N"]))

    return handler


def checked(layout: Layout[Any], current: V | None, entity_id: str, expected_version: int | None) -> V:
    """``current`` as read, refused if missing or not at the version the caller expected."""
    entity = layout.entity
    if current is None:
        raise NotFound(entity, entity_id)
    if expected_version is not None and current.version != expected_version:
        raise _changed(entity, current.version)
    return current


def _changed(entity: type[Any], current_version: int) -> StaleVersion:
    return StaleVersion(
        f"{entity.__name__} was changed by someone else (now at version {current_version})",
        current_version=current_version,
    )


def put_versioned(layout: Layout[Any], item: Item, expected: int) -> transact.Op:
    """Replace the whole item if it is still at ``expected``."""
    return transact.put(
        item,
        condition="#version = :expected",
        names={"#version": _version_of(layout)},
        values={":expected": {"N": str(expected)}},
        on_failed=stale(layout),
    )


def update_versioned(layout: Layout[Any], item: Item, expected: int) -> transact.Op:
    """Write ``item``'s attributes, as a Put would, if the item is still at ``expected``.

    An update, not a Put: attributes that other writes keep on the same item and that
    ``item`` does not carry (a job's application counters, changed by ``ADD`` without
    touching the version) are left as they are, so no concurrent counter change is lost.
    The kind's optional attributes and index keys (a sparse index's) that ``item`` lacks
    are removed, exactly as replacing the item would drop them.
    """
    actions: list[updates.Action] = [
        updates.Set(name, value) for name, value in item.items() if name not in (keys.PK, keys.SK)
    ]
    actions += [updates.Remove(name) for name in (*layout.optional_names, *layout.index_names) if name not in item]
    return transact.update(
        keys.Key(item[keys.PK]["S"], item[keys.SK]["S"]),
        actions,
        condition="#version = :expected",
        names={"#version": _version_of(layout)},
        values={":expected": {"N": str(expected)}},
        on_failed=stale(layout),
    )
