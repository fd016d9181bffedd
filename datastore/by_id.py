"""Items of any kind by id, read together: one GetItem, or BatchGetItem calls of 100 keys.

The request's entity loader (graphql_api/schema/loaders.py) hands over every id asked for in one
loop turn, whatever its kind, so the caller check's organisation and employee share one
BatchGetItem with the query's own first reads (issue 12 lever 4). Ids arrive typed (parsed
where they entered, ``datastore/ids.py``); an organisation other than the tenant's is none
of its business (None).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from datastore import items, keys
from datastore.table import Table


class Kind(Enum):
    ORGANIZATION = "organization"
    SUBSCRIPTION = "subscription"
    DEPARTMENT = "department"
    EMPLOYEE = "employee"
    JOB = "job"
    APPLICATION = "application"

    # A request's entity keys are (Kind, id) tuples, hashed about ten times each by the loader
    # (Q2: some 15,000 times). Enum's own hash is a Python call (the hash of the name); the
    # identity hash is a C slot, about half the cost. Members are singletons compared by
    # identity, so it agrees with equality; no hash of a Kind outlives the process.
    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True)
class _Reader:
    key: Callable[[str, Any], keys.Key | None]  # (tenant's org id, id) -> key; None: nothing to read
    convert: Callable[[items.Item], Any]


def _own(org_id: str, asked: Any) -> str | None:
    return org_id if asked == org_id else None


def _organization_key(org_id: str, asked: Any) -> keys.Key | None:
    return None if _own(org_id, asked) is None else keys.organization_key(org_id)


def _subscription_key(org_id: str, asked: Any) -> keys.Key | None:
    return None if _own(org_id, asked) is None else keys.subscription_key(org_id)


def _application_key(org_id: str, asked: Any) -> keys.Key:
    job_id, app_id = asked
    return keys.application_key(org_id, job_id, app_id)


_READERS: Final[dict[Kind, _Reader]] = {
    Kind.ORGANIZATION: _Reader(_organization_key, items.organization_from),
    Kind.SUBSCRIPTION: _Reader(_subscription_key, items.subscription_from),
    Kind.DEPARTMENT: _Reader(
        keys.department_key,
        items.department_from,
    ),
    Kind.EMPLOYEE: _Reader(
        keys.employee_key,
        items.employee_from,
    ),
    Kind.JOB: _Reader(keys.job_key, items.job_from),
    Kind.APPLICATION: _Reader(_application_key, items.application_from),
}


def get_by_id(table: Table, wanted: Sequence[tuple[Kind, Any]]) -> list[Any]:
    """Each (kind, typed id) of ``wanted`` as its entity, None when missing.

    One distinct key is a GetItem; more go to ``Table.batch_get`` (duplicates read once).
    """
    org_id = table.tenant.org_id
    located = [_READERS[kind].key(org_id, asked) for kind, asked in wanted]
    to_read = list(dict.fromkeys(key for key in located if key is not None))
    if len(to_read) == 1:
        found = {to_read[0]: table.get(to_read[0])}
    else:
        found = dict(zip(to_read, table.batch_get(to_read), strict=True)) if to_read else {}
    answers: list[Any] = []
    for (kind, _), key in zip(wanted, located, strict=True):
        item = None if key is None else found[key]
        answers.append(None if item is None else _READERS[kind].convert(item))
    return answers
