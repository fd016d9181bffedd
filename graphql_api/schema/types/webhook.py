"""WebhookEndpoint and WebhookDelivery: an organisation's webhooks as its admins see them (never a secret)."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime

import strawberry

from datastore.kinds import webhook_entities
from datastore.table.pagination import Page, PageRequest
from datastore.table.scoped import Table
from datastore.webhooks import outbox
from graphql_api.execution import ids
from graphql_api.request.context import RequestContext
from graphql_api.schema.types.connection import DEFAULT_PAGE_SIZE, After, Connection, First, paginate
from graphql_api.schema.types.scalars import WebhookDeliveryStatus

Info = strawberry.Info[RequestContext, None]


@strawberry.type(
    description="One audit event owed to one endpoint, and what its attempts got. Every attempt sends the same "
    "`webhook-id` (the audit event's id), so receivers deduplicate retries and redeliveries."
)
class WebhookDelivery:
    id: strawberry.ID = strawberry.field(description="Opaque id of the delivery; pass it to redeliverWebhook.")
    event_id: str = strawberry.field(description="The audit event's id: the `webhook-id` header of every attempt.")
    event_type: str = strawberry.field(description="The audit action delivered (`employee.create`, ...).")
    object_type: str = strawberry.field(description="The kind of object the event is about (`Employee`, ...).")
    object_id: str = strawberry.field(description="The id of the object the event is about.")
    status: WebhookDeliveryStatus = strawberry.field(description="PENDING, DELIVERED or FAILED.")
    attempts: int = strawberry.field(description="Attempts made so far (redeliveries included).")
    last_status_code: int | None = strawberry.field(
        description="The HTTP status of the last attempt's answer; null when none came (timeout, connection failure)."
    )
    last_error: str | None = strawberry.field(
        description="Why the last attempt failed, with at most 1 KiB of the answer's body; null after a success."
    )
    next_attempt_at: datetime | None = strawberry.field(description="When it is attempted next; null unless PENDING.")
    last_attempt_at: datetime | None = strawberry.field(
        description="When it was last attempted; null before the first."
    )
    created_at: datetime = strawberry.field(description="When it was recorded (before its first attempt).")

    @classmethod
    def of(cls, delivery: webhook_entities.WebhookDelivery) -> WebhookDelivery:
        return cls(
            id=strawberry.ID(ids.encode("WebhookDelivery", delivery.endpoint_id, delivery.event_id)),
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            object_type=delivery.entity_type,
            object_id=delivery.entity_id,
            status=delivery.status,
            attempts=delivery.attempts,
            last_status_code=delivery.last_status_code,
            last_error=delivery.last_error,
            next_attempt_at=delivery.next_attempt_at,
            last_attempt_at=delivery.last_attempt_at,
            created_at=delivery.created_at,
        )


def deliveries_of_endpoint(
    table: Table, parent: str | None, request: PageRequest
) -> Awaitable[Page[webhook_entities.WebhookDelivery]]:
    """The list fetcher of WebhookEndpoint.deliveries (types/connection.py); ``parent`` is the endpoint id."""
    return table.page(outbox.deliveries_of(table.tenant.org_id, parent or ""), request)


@strawberry.type(
    description="Where the organisation's events are POSTed (Standard Webhooks: signed JSON with `webhook-id`, "
    "`webhook-timestamp` and `webhook-signature` headers), and which. Admins only; its secret is shown only by "
    "createWebhookEndpoint and rotateWebhookSecret."
)
class WebhookEndpoint:
    id: strawberry.ID = strawberry.field(description="Opaque id of the endpoint.")
    url: str = strawberry.field(description="Where events are POSTed: https (http on the loopback in development).")
    event_types: list[str] = strawberry.field(
        description="The audit actions delivered (`employee.create`), or `<entity>.*` for every action on one kind."
    )
    description: str = strawberry.field(description="What the endpoint is for; may be empty.")
    enabled: bool = strawberry.field(description="False: nothing is delivered to it (events meanwhile are not owed).")
    disabled_reason: str | None = strawberry.field(
        description="Why it is disabled: by an admin, or by the server after every attempt failed for 3 days."
    )
    failing_since: datetime | None = strawberry.field(
        description="When its attempts started failing; null while the last attempt succeeded."
    )
    needs_secret_rotation: bool = strawberry.field(
        description="True for an endpoint restored from an export (secrets are never exported): nothing is "
        "delivered until rotateWebhookSecret gives it a new secret."
    )
    created_at: datetime = strawberry.field(description="When it was created; only later events are delivered.")
    endpoint_id: strawberry.Private[str]

    @strawberry.field(description="Its deliveries, newest event first.")
    async def deliveries(
        self, info: Info, first: First = DEFAULT_PAGE_SIZE, after: After = None
    ) -> Connection[WebhookDelivery]:
        return await paginate(
            info,
            deliveries_of_endpoint,
            f"WebhookEndpoint.deliveries:{self.endpoint_id}",
            WebhookDelivery.of,
            first,
            after,
            parent=self.endpoint_id,
            descending=True,
        )

    @classmethod
    def of(cls, endpoint: webhook_entities.WebhookEndpoint) -> WebhookEndpoint:
        return cls(
            id=strawberry.ID(ids.encode("WebhookEndpoint", endpoint.endpoint_id)),
            url=endpoint.url,
            event_types=list(endpoint.event_types),
            description=endpoint.description,
            enabled=endpoint.enabled,
            disabled_reason=endpoint.disabled_reason,
            failing_since=endpoint.failing_since,
            needs_secret_rotation=endpoint.needs_rotation,
            created_at=endpoint.created_at,
            endpoint_id=endpoint.endpoint_id,
        )
