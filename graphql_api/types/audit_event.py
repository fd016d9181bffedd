"""AuditEvent: one successful write, as admins read it in ``organization.auditLog``."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from datastore import entities
from graphql_api.context import RequestContext

if TYPE_CHECKING:
    from graphql_api.types.employee import Employee

Info = strawberry.Info[RequestContext, None]


@strawberry.type(description="A field a write changed; values as text, null when unset.")
class FieldChange:
    field: str
    before: str | None
    after: str | None

    @classmethod
    def of(cls, change: entities.FieldChange) -> FieldChange:
        return cls(field=change.field, before=_text(change.before), after=_text(change.after))


@strawberry.type(description="One successful write: who did what to which entity, and when.")
class AuditEvent:
    occurred_at: datetime
    action: str = strawberry.field(description="For example employee.move or job.close.")
    entity_type: str
    entity_id: str = strawberry.field(description="The entity's own id (not a global id).")
    changes: list[FieldChange]
    before_version: int | None
    after_version: int | None
    actor_id: strawberry.Private[str | None]

    @strawberry.field(description="The employee who wrote it; null for platform writes.")
    async def actor(self, info: Info) -> Annotated[Employee, strawberry.lazy("graphql_api.types.employee")] | None:
        from graphql_api.types.employee import Employee

        if self.actor_id is None:
            return None
        found = await info.context.session.loaders.employee.get(self.actor_id)
        return None if found is None else Employee.of(found)

    @classmethod
    def of(cls, event: entities.AuditEvent) -> AuditEvent:
        return cls(
            occurred_at=event.occurred_at,
            action=event.action,
            entity_type=event.entity_type,
            entity_id=event.entity_id,
            changes=[FieldChange.of(change) for change in event.changes],
            before_version=event.before_version,
            after_version=event.after_version,
            actor_id=event.actor_id,
        )


def _text(value: entities.AuditValue) -> str | None:
    return None if value is None else str(value)
