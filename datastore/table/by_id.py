"""Items by id, derived from their kinds' declarations: one, many, or of several kinds at once.

``get`` and ``get_many`` read one kind by its key's ids (the tenant's organisation first),
which every ``get_<entity>`` of the datastore is. The request's entity loader
(graphql_api/execution/loaders.py) hands over every id asked for in one loop turn, whatever its
kind, so ``get_by_id`` reads them together: the caller check's organisation and employee
share one BatchGetItem with the query's own first reads. Ids arrive typed
(parsed where they entered, ``datastore/values/ids.py``); an organisation other than the tenant's is
none of its business (None).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, Final, TypeVar

from datastore.kinds import layout
from datastore.kinds.model import Layout
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values.items import Item

E = TypeVar("E")


class Kind(Enum):
    ORGANIZATION = "organization"
    SUBSCRIPTION = "subscription"
    DEPARTMENT = "department"
    EMPLOYEE = "employee"
    JOB = "job"
    APPLICATION = "application"
    API_KEY = "api_key"

    # A request's entity keys are (Kind, id) tuples, hashed about ten times each by the loader
    # (Q2: some 15,000 times). Enum's own hash is a Python call (the hash of the name); the
    # identity hash is a C slot, about half the cost. Members are singletons compared by
    # identity, so it agrees with equality; no hash of a Kind outlives the process.
    __hash__ = object.__hash__


LAYOUTS: Final[dict[Kind, Layout[Any]]] = {
    Kind.ORGANIZATION: layout.ORGANIZATION,
    Kind.SUBSCRIPTION: layout.SUBSCRIPTION,
    Kind.DEPARTMENT: layout.DEPARTMENT,
    Kind.EMPLOYEE: layout.EMPLOYEE,
    Kind.JOB: layout.JOB_POSTING,
    Kind.APPLICATION: layout.APPLICATION,
    Kind.API_KEY: layout.API_KEY,
}


async def get(table: Table, kind: Layout[E], *ids: str, consistent: bool = False) -> E | None:
    """One item of ``kind`` by the ids of its key after the tenant's (one GetItem), or None."""
    item = await table.get(kind.key_at(table.tenant.org_id, *ids), consistent=consistent)
    return None if item is None else kind.read(item)


async def get_many(table: Table, kind: Layout[E], ids: Sequence[str | tuple[str, ...]]) -> list[E | None]:
    """Many items of ``kind`` through BatchGetItem, in the order asked, None for a miss."""
    org_id = table.tenant.org_id
    wanted = [kind.key_at(org_id, *each) if isinstance(each, tuple) else kind.key_at(org_id, each) for each in ids]
    return await table.get_many(wanted, kind.read)


def _key(kind: Layout[Any], org_id: str, asked: Any) -> keys.Key | None:
    if kind.slots == ("org_id",):
        # The tenant's own items (its organisation, its subscription) go by its id alone.
        return kind.key_at(org_id) if asked == org_id else None
    return kind.key_at(org_id, *asked) if isinstance(asked, tuple) else kind.key_at(org_id, asked)


def locate(org_id: str, wanted: Sequence[tuple[Kind, Any]]) -> tuple[list[keys.Key | None], list[keys.Key]]:
    """Each (kind, typed id)'s key (None when it is none of the tenant's), and the distinct keys to read."""
    located = [_key(LAYOUTS[kind], org_id, asked) for kind, asked in wanted]
    return located, list(dict.fromkeys(key for key in located if key is not None))


def answers(
    wanted: Sequence[tuple[Kind, Any]], located: Sequence[keys.Key | None], found: dict[keys.Key, Item | None]
) -> list[Any]:
    """Each (kind, typed id) of ``wanted`` as its entity from the items ``found``, None when missing."""
    entities: list[Any] = []
    for (kind, _), key in zip(wanted, located, strict=True):
        item = None if key is None else found[key]
        entities.append(None if item is None else LAYOUTS[kind].read(item))
    return entities


async def get_by_id(table: Table, wanted: Sequence[tuple[Kind, Any]]) -> list[Any]:
    """Each (kind, typed id) of ``wanted`` as its entity, None when missing.

    One distinct key is a GetItem; more go to ``Table.batch_get`` (duplicates read once).
    """
    located, to_read = locate(table.tenant.org_id, wanted)
    if len(to_read) == 1:
        found = {to_read[0]: await table.get(to_read[0])}
    else:
        found = dict(zip(to_read, await table.batch_get(to_read), strict=True)) if to_read else {}
    return answers(wanted, located, found)
