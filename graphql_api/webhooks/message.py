"""The thin event a receiver gets, and its Standard Webhooks headers.

The body names what happened and to what, never a value: the event type (the audit
action), when it happened, the organisation, the object's type, id and version, and the
audit event's id. A receiver reads what it needs through the API with its own key, so an
erased person's values can never be in a delivery, not even one retried after the erasure.

``webhook-id`` is the audit event's id on every attempt and every redelivery, so a receiver
deduplicates by it. The signature is the ``standardwebhooks`` library's (``v1,`` and the
HMAC-SHA256 of ``id.timestamp.body``); during a rotation's overlap both the new and the
previous secret sign, space-separated, so a receiver holding either verifies.
"""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
from standardwebhooks import Webhook

from datastore.kinds.webhook_entities import WebhookDelivery, WebhookEndpoint
from datastore.values.items import timestamp


def body(delivery: WebhookDelivery) -> bytes:
    return orjson.dumps(
        {
            "type": delivery.event_type,
            "timestamp": timestamp(delivery.occurred_at),
            "data": {
                "eventId": delivery.event_id,
                "organizationId": delivery.org_id,
                "objectType": delivery.entity_type,
                "objectId": delivery.entity_id,
                "objectVersion": delivery.entity_version,
            },
        }
    )


def secrets_signing(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The secrets that sign now: the current one, and the previous one within its overlap."""
    found = [] if endpoint.secret is None else [endpoint.secret]
    until = endpoint.previous_secret_until
    if endpoint.previous_secret is not None and until is not None and now < until:
        found.append(endpoint.previous_secret)
    return found


def headers(delivery: WebhookDelivery, endpoint: WebhookEndpoint, payload: bytes, now: datetime) -> dict[str, str]:
    """The request's headers, each signing secret's signature in ``webhook-signature``.

    ValueError when no secret signs (an endpoint restored from an export, not yet rotated)."""
    signing = secrets_signing(endpoint, now)
    if not signing:
        raise ValueError("the endpoint has no signing secret: rotate it")
    at = now.astimezone(UTC)
    text = payload.decode()
    signatures = [Webhook(secret).sign(delivery.event_id, at, text) for secret in signing]
    return {
        "content-type": "application/json",
        "webhook-id": delivery.event_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": " ".join(signatures),
    }
