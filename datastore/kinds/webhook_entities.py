"""The values webhooks store: an endpoint, one delivery of one event to it, the dispatcher's cursor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from datastore.values.ids import OrgId


class DeliveryStatus(StrEnum):
    # Recorded, not yet answered with a 2xx: attempted when its ``next_attempt_at`` comes.
    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    # A final answer (a 4xx other than 408 and 429), or the retry schedule ran out.
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    """Where an organisation wants its events POSTed, and which ones.

    ``secret`` is None for an endpoint restored from an export (secrets are never exported):
    nothing is sent to it until an admin rotates its secret. ``previous_secret`` keeps signing
    beside the new one until ``previous_secret_until`` (a rotation's overlap).
    """

    org_id: OrgId
    endpoint_id: str
    url: str
    event_types: tuple[str, ...]
    description: str
    enabled: bool
    created_at: datetime
    version: int
    secret: str | None = None
    previous_secret: str | None = None
    previous_secret_until: datetime | None = None
    # Set when the endpoint starts failing (no 2xx), cleared by its next success.
    failing_since: datetime | None = None
    # Why it is disabled, when the dispatcher disabled it (an admin's disabling says so too).
    disabled_reason: str | None = None

    @property
    def needs_rotation(self) -> bool:
        return self.secret is None


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One audit event owed to one endpoint: the outbox item, and what its attempts got.

    ``event_id`` is the audit event's id: the ``webhook-id`` of every attempt, so a receiver
    deduplicates retries and redeliveries by it.
    """

    org_id: OrgId
    endpoint_id: str
    event_id: str
    event_type: str
    entity_type: str
    entity_id: str
    occurred_at: datetime
    status: DeliveryStatus
    attempts: int
    created_at: datetime
    expires_at: datetime
    entity_version: int | None = None
    next_attempt_at: datetime | None = None
    last_attempt_at: datetime | None = None
    last_status_code: int | None = None
    # What went wrong, with at most 1 KiB of the answer's body.
    last_error: str | None = None

    @property
    def pending(self) -> bool:
        return self.status is DeliveryStatus.PENDING


@dataclass(frozen=True, slots=True)
class WebhookCursor:
    """The id of the newest audit event of the organisation the dispatcher has turned into
    deliveries: it reads on from a little before it (datastore/webhooks/outbox.py)."""

    org_id: OrgId
    event_id: str
