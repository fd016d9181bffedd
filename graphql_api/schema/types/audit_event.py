"""AuditEvent: one successful write, as admins read it in ``organization.auditLog``."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from datastore.kinds import entities
from datastore.values.items import AuditValue
from graphql_api.request.context import RequestContext

if TYPE_CHECKING:
    from graphql_api.schema.types.employee import Employee

Info = strawberry.Info[RequestContext, None]


@strawberry.type(description="A field a write changed; values as text, null when unset.")
class FieldChange:
    field: str = strawberry.field(
        description="The changed field's name as the API spells it, for example `departmentId`."
    )
    before: str | None = strawberry.field(
        description="Its value before the write; null when it had none, or when it was a person's email or name "
        "that erasePerson removed (the event's `erasedAt`)."
    )
    after: str | None = strawberry.field(
        description="Its value after the write; null when it has none, or when it was a person's email or name "
        "that erasePerson removed (the event's `erasedAt`)."
    )

    @classmethod
    def of(cls, change: entities.FieldChange) -> FieldChange:
        return cls(field=change.field, before=_text(change.before), after=_text(change.after))


@strawberry.type(description="One successful write: who did what to which entity, and when.")
class AuditEvent:
    occurred_at: datetime = strawberry.field(description="When the write was committed.")
    action: str = strawberry.field(
        description="What was done, as `<entity>.<verb>`: for example `employee.move` or `job.close`."
    )
    entity_type: str = strawberry.field(
        description="The kind of entity written, for example `Employee` or `JobPosting`."
    )
    entity_id: str = strawberry.field(
        description="The entity's own id (a ULID, not a global id): the same for every event of one entity."
    )
    changes: list[FieldChange] = strawberry.field(description="The fields the write changed, in no particular order.")
    before_version: int | None = strawberry.field(
        description="The entity's version before the write; null for a creation or an unversioned entity."
    )
    after_version: int | None = strawberry.field(
        description="The entity's version after the write; null for an unversioned entity."
    )
    erased_at: datetime | None = strawberry.field(
        description="When erasePerson removed a person's personal values (email, names) from this event's "
        "changes, which then show null; null when nothing was removed."
    )
    actor_id: strawberry.Private[str | None]

    @strawberry.field(description="The employee who wrote it; null for platform writes.")
    async def actor(
        self, info: Info
    ) -> Annotated[Employee, strawberry.lazy("graphql_api.schema.types.employee")] | None:
        from graphql_api.schema.types.employee import Employee

        if self.actor_id is None:
            return None
        found = await info.context.loaders.employee.get(self.actor_id)
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
            erased_at=event.erased_at,
            actor_id=event.actor_id,
        )


def _text(value: AuditValue) -> str | None:
    return None if value is None else str(value)
