"""The SQS queue AWS's functions deliver from: what a message says, and sending messages.

A message names one delivery and nothing else: the organisation, the endpoint and the event
(``{"org": ..., "endpoint": ..., "event": ...}``). No secret, no URL, no value: the consumer
reads the delivery and its endpoint from the organisation's own partition, so a message is
only ever a reminder that the outbox owes something. A lost message is found again by the
sweep; a duplicate is one attempt at most that finds nothing left to do (or, rarely, a second
POST with the same ``webhook-id``, which receivers deduplicate).

``DelaySeconds`` is at most 900 s (SQS's bound): a longer wait is made of several hops, each
message re-sent by the consumer with the time still left, up to 900 s at a time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

import orjson

from datastore.kinds.webhook_entities import WebhookDelivery
from datastore.values import ids
from datastore.values.ids import OrgId

MAX_DELAY_SECONDS: Final = 900
# SendMessageBatch's bound.
BATCH: Final = 10
_FIELDS: Final = ("org", "endpoint", "event")


class QueueError(Exception):
    """SQS refused a message: the caller fails its batch (or its item), which is retried."""


@dataclass(frozen=True, slots=True)
class QueueMessage:
    org_id: OrgId
    endpoint_id: str
    event_id: str
    delay_seconds: int = 0

    def body(self) -> str:
        return orjson.dumps({"org": self.org_id, "endpoint": self.endpoint_id, "event": self.event_id}).decode()

    @classmethod
    def parse(cls, text: str) -> QueueMessage:
        """ValueError for anything but the three ids as short strings."""
        try:
            found = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise ValueError("not JSON") from None
        if not isinstance(found, dict) or set(found) != set(_FIELDS):
            raise ValueError("not a webhook delivery's message")
        org, endpoint, event = (ids.parse(str, found[name]) for name in _FIELDS)
        if org is None or endpoint is None or event is None:
            raise ValueError("not a webhook delivery's message: three ids")
        return cls(OrgId(org), endpoint, event)


def message_for(delivery: WebhookDelivery, now: datetime) -> QueueMessage:
    """The delivery's message, delayed until it is due (at most MAX_DELAY_SECONDS: one hop)."""
    wait = 0.0 if delivery.next_attempt_at is None else (delivery.next_attempt_at - now).total_seconds()
    delay = min(MAX_DELAY_SECONDS, max(0, math.ceil(wait)))
    return QueueMessage(delivery.org_id, delivery.endpoint_id, delivery.event_id, delay)


class Queue(Protocol):
    def send(self, messages: Sequence[QueueMessage]) -> None: ...


class SqsQueue:
    """The queue through boto3's SQS client (its endpoint from the environment: AWS's, or a local one)."""

    def __init__(self, client: Any, url: str) -> None:
        self.client = client
        self.url = url

    def send(self, messages: Sequence[QueueMessage]) -> None:
        """Every message, SendMessageBatch ten at a time; QueueError naming any SQS refused."""
        for start in range(0, len(messages), BATCH):
            chunk = messages[start : start + BATCH]
            answer = self.client.send_message_batch(
                QueueUrl=self.url,
                Entries=[
                    {"Id": str(index), "MessageBody": message.body(), "DelaySeconds": message.delay_seconds}
                    for index, message in enumerate(chunk)
                ],
            )
            failed = answer.get("Failed") or []
            if failed:
                reasons = ", ".join(f"{entry.get('Code')}: {entry.get('Message', '')}" for entry in failed)
                raise QueueError(f"SQS refused {len(failed)} of {len(chunk)} messages ({reasons})")
