"""What one write changed, as the write functions describe it to the write path.

Each write function builds one Change next to its operations; ``datastore.writes.envelope`` turns it
into the audit event and the idempotency record of the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from datastore.kinds.entities import FieldChange
from datastore.kinds.layout import ENTITY, ORG_ID, VERSION
from datastore.tenancy import keys
from datastore.values.ids import OrgId
from datastore.values.items import Item, audit_value

# Attributes that are layout, not data: never reported as changed fields.
_NOT_FIELDS: Final = frozenset({keys.PK, keys.SK, keys.GSI1PK, keys.GSI1SK, ENTITY, ORG_ID, VERSION})


@dataclass(frozen=True, slots=True)
class Change:
    """One write of one entity: ``before`` is None for a create.

    ``before`` and ``after`` are the entity's items (its own, not its copies); ``result`` is
    what a replay of the write returns, ``after`` unless the write returns more than the
    entity (creating an organisation returns its first admin too).
    """

    action: str
    entity_type: str
    entity_id: str
    org_id: OrgId
    before: Item | None
    after: Item
    result: Item | None = None

    @property
    def before_version(self) -> int | None:
        return _version(self.before)

    @property
    def after_version(self) -> int | None:
        return _version(self.after)

    @property
    def snapshot(self) -> Item:
        return self.after if self.result is None else self.result

    def fields(self) -> tuple[FieldChange, ...]:
        """The fields whose value differs, in name order, with their before and after."""
        before = self.before or {}
        names = sorted((set(before) | set(self.after)) - _NOT_FIELDS)
        return tuple(
            FieldChange(name, audit_value(before.get(name)), audit_value(self.after.get(name)))
            for name in names
            if before.get(name) != self.after.get(name)
        )


def _version(item: Item | None) -> int | None:
    if item is None or VERSION not in item:
        return None
    return int(item[VERSION]["N"])
