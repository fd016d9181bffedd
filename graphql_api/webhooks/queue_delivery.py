"""Webhooks on AWS: the outbox fed from the table's stream, delivered from an SQS queue.

Three jobs, one Lambda function each (graphql_api/entrypoints/lambda_webhooks.py), every one
through the same round and attempt code as this server's dispatcher (rounds.py):

- ``from_stream``: a batch of the table's stream records. Each organisation with audit
  events in it gets a round from its batch's oldest event: deliveries are written to the
  outbox first, then one message is sent per delivery that is due and its object's oldest
  pending one. A failure fails the batch, which Lambda retries: writing the outbox twice
  writes it once, and a duplicate message finds nothing left to do.
- ``consume``: a batch of queue messages. Each names a delivery; the consumer re-reads it,
  and attempts it only when it is pending, due, and no older delivery of the same object to
  the same endpoint is pending (the outbox's order: a standard queue, not a FIFO one, as SQS
  delays single messages only on standard queues, and the retry schedule needs them). After
  the attempt it sends the next message: the same delivery's retry, delayed by the schedule
  (up to 900 s per hop, the consumer re-sending the rest of a longer wait), or the object's
  next pending delivery. A message whose DynamoDB or SQS call failed is reported in
  ``batchItemFailures``: it comes back after the queue's visibility timeout, and after
  ``maxReceiveCount`` receives it goes to the dead-letter queue (and its alarm).
- ``sweep``: every few minutes (an EventBridge schedule), each organisation with endpoints
  gets a round reading the audit trail back from its cursor (what the stream's function
  missed: a late commit, records given up on), and a message for every delivery that is due
  but has been overdue for longer than a message may legitimately still be in the queue
  (``queue_lost_after_seconds``: the visibility timeout times maxReceiveCount). So the outbox
  stays the source of truth: a lost message, one in the dead-letter queue, an endpoint
  enabled again or a redelivery is sent again from it.

Each job is a coroutine: its DynamoDB calls awaited on the invocation's event loop, a batch's
messages attempted at once; the blocking parts (the POSTs, graphql_api/auth/outbound.py, and
SQS's calls through boto3) on this object's threads.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

import orjson

from datastore.errors import DatastoreError, NotFound
from datastore.feed import records
from datastore.feed.records import ChangeName, StreamRecord
from datastore.kinds.entities import AuditEvent
from datastore.kinds.webhook_entities import WebhookDelivery
from datastore.table.scoped import Table
from datastore.table.store import Datastore
from datastore.tenancy.scope import TenantScope
from datastore.values import items
from datastore.values.ids import OrgId, id_ceiling, id_milliseconds
from datastore.webhooks import outbox
from graphql_api.observability.labels import BoundedLabel
from graphql_api.settings.webhooks import WebhookSettings
from graphql_api.webhooks import metrics, rounds
from graphql_api.webhooks.queue import Queue, QueueError, QueueMessage, message_for

log = logging.getLogger("hr.webhooks")

AUDIT_EVENT: Final = "AuditEvent"
# Who the audit trail names for these functions' own writes (an endpoint they disabled).
ACTOR: Final = "webhook-queue"
# The EMF namespace and metrics the consumer publishes (the template's alarm reads ERRORS).
NAMESPACE: Final = "HrApi"
ATTEMPTS: Final = "WebhookAttempts"
ERRORS: Final = "WebhookDeliveryErrors"


@dataclass
class Counts:
    """What one invocation did, for its log line and its EMF metrics."""

    attempts: int = 0
    sent: int = 0
    errors: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


class QueueDelivery:
    def __init__(
        self,
        datastore: Datastore,
        settings: WebhookSettings,
        queue: Queue,
        *,
        allow_private: bool,
        max_tenants: int = 100,
    ) -> None:
        self.datastore = datastore
        self.settings = settings
        self.queue = queue
        self.allow_private = allow_private
        self._tenant = BoundedLabel(max_tenants)
        self._index = datastore.table(outbox.WebhooksScope())
        self._pool = ThreadPoolExecutor(settings.in_all, thread_name_prefix="webhooks")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _table(self, org: OrgId) -> Table:
        return self.datastore.table(TenantScope(org, ACTOR))

    # --- the table's stream ------------------------------------------------------------------------

    async def from_stream(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """One batch of stream records (Lambda's DynamoDB Streams event). Raises to fail the batch."""
        oldest: dict[OrgId, str] = {}
        for entry in event.get("Records") or ():
            record = StreamRecord.of(entry, shard_id=str(entry.get("eventID", "")))
            org = record.org_id
            if org is None or record.kind != AUDIT_EVENT or record.name is not ChangeName.INSERT:
                continue
            change = records.decode(record)
            if isinstance(change.new, AuditEvent):
                found = OrgId(org)
                oldest[found] = min(change.new.event_id, oldest.get(found, change.new.event_id))
        counts = Counts()
        for org, event_id in sorted(oldest.items()):
            after = id_ceiling(id_milliseconds(event_id) - 1)  # that event's millisecond on
            owed = await rounds.collect(self._table(org), self.settings, after=after, tenant=self._tenant(org))
            if owed is None:
                continue
            written = {(each.endpoint_id, each.event_id) for each in owed.written}
            await self._send(counts, [d for d in self._due_heads(owed) if (d.endpoint_id, d.event_id) in written])
        log.info("webhooks: stream batch: %d organisations, %d messages sent", len(oldest), counts.sent)
        return {"organisations": len(oldest), "sent": counts.sent}

    def _due_heads(self, owed: rounds.Owed) -> Iterable[WebhookDelivery]:
        now = items.now()
        for deliveries in owed.pending.values():
            for delivery in rounds.heads(deliveries):
                if rounds.due(delivery, now):
                    yield delivery

    async def _send(self, counts: Counts, deliveries: Sequence[WebhookDelivery]) -> None:
        now = items.now()
        messages = [message_for(delivery, now) for delivery in deliveries]
        if messages:
            await asyncio.get_running_loop().run_in_executor(self._pool, self.queue.send, messages)
            counts.sent += len(messages)

    # --- the queue -----------------------------------------------------------------------------------

    async def consume(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """One batch of queue messages (Lambda's SQS event): ``batchItemFailures`` names the
        messages to receive again (their DynamoDB or SQS calls failed)."""
        started = time.monotonic()
        counts = Counts()
        work: dict[QueueMessage, list[str]] = {}
        for entry in event.get("Records") or ():
            message_id = str(entry.get("messageId", ""))
            try:
                message = QueueMessage.parse(str(entry.get("body", "")))
            except ValueError as error:
                log.warning("webhooks: message %s dropped: %s", message_id, error)  # received again it would be too
                continue
            work.setdefault(message, []).append(message_id)  # one attempt for a message sent twice
        failed: list[str] = []
        if work:
            done = await asyncio.gather(*(self._one(message, counts) for message in work))
            for message, ok in zip(work, done, strict=True):
                if not ok:
                    failed += work[message]
        _emit(counts)
        log.info(
            "webhooks: queue batch: %d messages, %d attempts, %d sent on, %d to receive again (%.0f ms)",
            sum(len(ids) for ids in work.values()),
            counts.attempts,
            counts.sent,
            len(failed),
            (time.monotonic() - started) * 1000,
        )
        return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}

    async def _one(self, message: QueueMessage, counts: Counts) -> bool:
        """Attempt what ``message`` names if it is the outbox's turn; False when a call failed."""
        table = self._table(message.org_id)
        try:
            try:
                delivery = await outbox.get_delivery(table, message.endpoint_id, message.event_id)
            except NotFound:
                return True  # gone, or never this organisation's
            now = items.now()
            if not delivery.pending:
                return True
            if not rounds.due(delivery, now):
                await self._send(counts, [delivery])  # one more hop of a wait longer than SQS delays
                return True
            if await rounds.earlier_pending(table, delivery, self.settings):
                return True  # the older one's attempt sends this one's message when it is done
            attempted = await rounds.attempt(
                table,
                message.endpoint_id,
                message.event_id,
                self.settings,
                allow_private=self.allow_private,
                tenant=self._tenant(message.org_id),
                executor=self._pool,
            )
            counts.attempts += attempted.sent
            recorded = attempted.recorded
            if recorded is None:
                return True
            counts.outcomes[recorded.status.value] = counts.outcomes.get(recorded.status.value, 0) + 1
            if recorded.pending:
                await self._send(counts, [recorded])  # the retry, by the schedule
            else:
                following = await rounds.next_of_object(table, recorded, self.settings)
                if following is not None:
                    await self._send(counts, [following])
            return True
        except (DatastoreError, QueueError) as error:
            metrics.ERRORS.inc()
            counts.errors += 1
            log.warning("webhooks: message for %s failed, to be received again: %s", message.org_id, error)
            return False

    # --- the sweep -----------------------------------------------------------------------------------

    async def sweep(self, _event: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every organisation with endpoints: its trail read back from its cursor, and a message
        for each delivery the queue has lost. Raises (the function's error) only when the
        organisations cannot be listed; an organisation that fails is logged and counted."""
        counts = Counts()
        orgs = await outbox.organisations_with_endpoints(self._index)
        lost_after = timedelta(seconds=self.settings.queue_lost_after_seconds)
        for org in orgs:
            try:
                owed = await rounds.collect(self._table(org), self.settings, after=None, tenant=self._tenant(org))
                if owed is None:
                    continue
                written = {(each.endpoint_id, each.event_id) for each in owed.written}
                now = items.now()
                await self._send(
                    counts,
                    [
                        delivery
                        for delivery in self._due_heads(owed)
                        if (delivery.endpoint_id, delivery.event_id) in written
                        or (delivery.next_attempt_at or now) <= now - lost_after
                    ],
                )
            except (DatastoreError, QueueError) as error:
                metrics.ERRORS.inc()
                counts.errors += 1
                log.warning("webhooks: the sweep of %s failed: %s", org, error)
        _emit(counts)
        log.info(
            "webhooks: sweep ended: %d organisations, %d messages sent, %d failed",
            len(orgs),
            counts.sent,
            counts.errors,
        )
        return {"organisations": len(orgs), "sent": counts.sent, "errors": counts.errors}


def _emit(counts: Counts) -> None:
    """One CloudWatch EMF line (stdout, which Lambda sends to the function's log group):
    attempts and the delivery errors (DynamoDB or SQS failures) the template's alarm reads."""
    line = {
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [[]],
                    "Metrics": [{"Name": ATTEMPTS, "Unit": "Count"}, {"Name": ERRORS, "Unit": "Count"}],
                }
            ],
        },
        ATTEMPTS: counts.attempts,
        ERRORS: counts.errors,
        "outcomes": counts.outcomes,
    }
    sys.stdout.write(orjson.dumps(line).decode() + "\n")
    sys.stdout.flush()
