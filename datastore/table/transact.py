"""Write operations as values, so one write can run alone or inside a transaction.

Each operation carries what its failed condition means (``on_failed``), so a cancelled
transaction becomes the typed error of the item that refused it, never a botocore error. An
update is given as typed actions (``datastore.table.updates``), which spell its expression.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from datastore.errors import Conflict, DatastoreError
from datastore.table import updates
from datastore.tenancy import keys
from datastore.values.items import Item

OpKind = Literal["Put", "Update", "Delete", "ConditionCheck"]
FailureHandler = Callable[[Item | None], DatastoreError]


def _conflict(_old: Item | None) -> DatastoreError:
    return Conflict("the item changed while it was being written")


@dataclass(frozen=True, slots=True)
class Op:
    kind: OpKind
    partition_key: str
    # The operation's parameters without TableName, as TransactWriteItems takes them.
    params: dict[str, Any]
    on_failed: FailureHandler = field(default=_conflict)


def _expression_params(
    condition: str | None,
    names: Mapping[str, str] | None,
    values: Mapping[str, Any] | None,
) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if condition is not None:
        params["ConditionExpression"] = condition
    if names:
        params["ExpressionAttributeNames"] = dict(names)
    if values:
        params["ExpressionAttributeValues"] = dict(values)
    return params


def put(
    item: Item,
    *,
    condition: str | None = None,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
    on_failed: FailureHandler = _conflict,
) -> Op:
    return Op(
        "Put",
        item[keys.PK]["S"],
        {"Item": item, **_expression_params(condition, names, values)},
        on_failed,
    )


def put_new(item: Item, on_failed: FailureHandler) -> Op:
    """Put an item that must not exist yet."""
    return put(item, condition="attribute_not_exists(PK)", on_failed=on_failed)


def update(
    key: keys.Key,
    actions: Sequence[updates.Action],
    *,
    condition: str | None = None,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
    on_failed: FailureHandler = _conflict,
) -> Op:
    """Apply ``actions`` (``datastore.table.updates``) to the item at ``key``; ``names`` and
    ``values`` are the condition's placeholders, kept apart from the update's own."""
    built = updates.build(actions)
    for placeholder in (*(names or {}), *(values or {})):
        if placeholder in built.names or placeholder in built.values:
            raise ValueError(f"the condition's placeholder {placeholder} is one of the update's")
    return Op(
        "Update",
        key.pk,
        {
            "Key": key.wire(),
            "UpdateExpression": built.expression,
            **_expression_params(condition, {**built.names, **(names or {})}, {**built.values, **(values or {})}),
        },
        on_failed,
    )


def delete(
    key: keys.Key,
    *,
    condition: str | None = None,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
    on_failed: FailureHandler = _conflict,
) -> Op:
    return Op(
        "Delete",
        key.pk,
        {"Key": key.wire(), **_expression_params(condition, names, values)},
        on_failed,
    )


def check(
    key: keys.Key,
    condition: str,
    *,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
    on_failed: FailureHandler = _conflict,
) -> Op:
    return Op(
        "ConditionCheck",
        key.pk,
        {"Key": key.wire(), **_expression_params(condition, names, values)},
        on_failed,
    )
