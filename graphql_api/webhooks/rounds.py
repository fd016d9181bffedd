"""One organisation's round of deliveries, whoever runs it: this server's dispatcher, or AWS's functions.

- ``collect``: the organisation's audit events after a position become delivery items (the
  outbox, before anything is sent), and its enabled endpoints' pending deliveries are listed.
- ``heads``: of those, each object's oldest: the only one of an object that may be attempted,
  so one object's events arrive in order.
- ``attempt``: one attempt of one delivery, re-read first and recorded on the condition that
  nobody recorded one since; then the endpoint's health (failing since, disabled after
  ``disable_after_seconds`` with an audit event).
- ``earlier_pending`` and ``next_of_object``: what a queue consumer, which holds no view of the
  organisation, asks before and after an attempt (graphql_api/webhooks/queue_delivery.py).

DynamoDB's calls are awaited on the caller's event loop; the POST itself, blocking
(graphql_api/auth/outbound.py), runs on the ``executor`` the caller gives ``attempt``, so a slow
receiver holds up no other delivery and nothing else on the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import datetime, timedelta

from datastore.errors import NotFound
from datastore.kinds.webhook_entities import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from datastore.table.scoped import Table
from datastore.values import items
from datastore.values.ids import id_time
from datastore.webhooks import endpoints as endpoint_store
from datastore.webhooks import outbox
from graphql_api.settings.webhooks import WebhookSettings
from graphql_api.webhooks import metrics
from graphql_api.webhooks.attempt import after_attempt, send

log = logging.getLogger("hr.webhooks")


@dataclass(frozen=True, slots=True)
class Owed:
    """What a round found: the endpoints, each deliverable endpoint's pending deliveries (oldest
    event first), the deliveries it wrote, and where it read the trail from and to."""

    endpoints: list[WebhookEndpoint]
    pending: dict[str, list[WebhookDelivery]]
    written: list[WebhookDelivery]
    after: str | None
    last_event_id: str | None


async def collect(table: Table, settings: WebhookSettings, *, after: str | None, tenant: str) -> Owed | None:
    """Enqueue the events after ``after`` (None: from ``reorder_seconds`` before the stored
    cursor) and list what is pending; None when the organisation has no endpoint."""
    endpoints = await endpoint_store.list_endpoints(table, consistent=True)
    if not endpoints:
        return None
    if after is None:
        after = outbox.start_after(
            endpoints, await outbox.cursor(table), back=timedelta(seconds=settings.reorder_seconds)
        )
    written: list[WebhookDelivery] = []
    last: str | None = None
    if after is not None:
        enqueued = await outbox.enqueue(table, endpoints, after)
        written = enqueued.written
        if written:
            metrics.ENQUEUED.labels(tenant).inc(len(written))
        last = enqueued.last_event_id
        if last is not None:
            await outbox.save_cursor(table, last)
    pending: dict[str, list[WebhookDelivery]] = {}
    for endpoint in endpoints:
        if endpoint.enabled and not endpoint.needs_rotation:
            pending[endpoint.endpoint_id] = await outbox.pending(
                table, endpoint.endpoint_id, limit=settings.pending_window
            )
    # Just written: the index may not list them yet (it is eventually consistent).
    for delivery in written:
        listed = pending.get(delivery.endpoint_id)
        if listed is not None and all(each.event_id != delivery.event_id for each in listed):
            listed.append(delivery)
    return Owed(endpoints, pending, written, after, last)


def heads(deliveries: list[WebhookDelivery]) -> list[WebhookDelivery]:
    """Each object's oldest delivery among ``deliveries`` (one endpoint's): the next in its order."""
    seen: set[str] = set()
    found: list[WebhookDelivery] = []
    for delivery in sorted(deliveries, key=lambda each: each.event_id):
        if delivery.entity_id not in seen:
            seen.add(delivery.entity_id)
            found.append(delivery)
    return found


def due(delivery: WebhookDelivery, now: datetime) -> bool:
    return delivery.next_attempt_at is None or delivery.next_attempt_at <= now


@dataclass(frozen=True, slots=True)
class Attempted:
    """An attempt's result: whether a request was sent, and the delivery as recorded after it
    (None when nothing was recorded: not due, not pending, or another attempt recorded first)."""

    sent: bool
    recorded: WebhookDelivery | None


NOTHING = Attempted(False, None)


async def attempt(
    table: Table,
    endpoint_id: str,
    event_id: str,
    settings: WebhookSettings,
    *,
    allow_private: bool,
    tenant: str,
    executor: Executor,
) -> Attempted:
    """Attempt the delivery now if it is still pending and due and its endpoint may be sent to
    (the POST on ``executor``'s threads)."""
    try:
        fresh = await outbox.get_delivery(table, endpoint_id, event_id)
        current = await endpoint_store.get_endpoint(table, endpoint_id)
    except NotFound:
        return NOTHING  # gone (its TTL, the endpoint deleted, or never this organisation's)
    now = items.now()
    if not fresh.pending or not due(fresh, now) or not current.enabled or current.needs_rotation:
        return NOTHING
    if fresh.attempts == 0:
        metrics.LAG.labels(tenant).observe(max(0.0, (now - id_time(fresh.event_id)).total_seconds()))
    post = functools.partial(send, fresh, current, settings, allow_private=allow_private, now=now)
    outcome = await asyncio.get_running_loop().run_in_executor(executor, contextvars.copy_context().run, post)
    done = after_attempt(fresh, outcome, settings, now=items.now())
    if not await outbox.record(table, fresh, done):
        return Attempted(True, None)
    label = "delivered" if done.status is DeliveryStatus.DELIVERED else done.status.value.lower()
    metrics.ATTEMPTS.labels(tenant, "retry" if done.status is DeliveryStatus.PENDING else label).inc()
    await _health(table, current, outcome.delivered, done.last_attempt_at or now, settings, tenant)
    return Attempted(True, done)


async def _health(
    table: Table, endpoint: WebhookEndpoint, delivered: bool, at: datetime, settings: WebhookSettings, tenant: str
) -> None:
    if delivered:
        await endpoint_store.record_health(table, endpoint, failing_since=None)
        return
    since = endpoint.failing_since
    if since is None:
        await endpoint_store.record_health(table, endpoint, failing_since=at)
        return
    if (at - since).total_seconds() >= settings.disable_after_seconds:
        reason = f"disabled: every attempt failed since {items.timestamp(since)}; the last: HTTP or connection failure"
        if await endpoint_store.disable_failing(table, endpoint.endpoint_id, reason) is not None:
            metrics.DISABLED.labels(tenant).inc()
            log.warning(
                "webhooks: endpoint %s of %s disabled after failing since %s",
                endpoint.endpoint_id,
                endpoint.org_id,
                since,
            )


async def _same_object(table: Table, delivery: WebhookDelivery, settings: WebhookSettings) -> list[WebhookDelivery]:
    listed = await outbox.pending(table, delivery.endpoint_id, limit=settings.pending_window)
    return [each for each in listed if each.entity_id == delivery.entity_id and each.event_id != delivery.event_id]


async def earlier_pending(table: Table, delivery: WebhookDelivery, settings: WebhookSettings) -> bool:
    """Whether an older delivery of the same object to the same endpoint is still pending (its
    index lists it; a strongly consistent read confirms it): this one waits its turn."""
    for each in await _same_object(table, delivery, settings):
        if each.event_id < delivery.event_id:
            try:
                if (await outbox.get_delivery(table, each.endpoint_id, each.event_id)).pending:
                    return True
            except NotFound:
                continue
    return False


async def next_of_object(table: Table, done: WebhookDelivery, settings: WebhookSettings) -> WebhookDelivery | None:
    """The same object's next pending delivery to the same endpoint after ``done``, re-read."""
    for each in sorted(await _same_object(table, done, settings), key=lambda found: found.event_id):
        if each.event_id > done.event_id:
            try:
                fresh = await outbox.get_delivery(table, each.endpoint_id, each.event_id)
            except NotFound:
                continue
            if fresh.pending:
                return fresh
    return None
