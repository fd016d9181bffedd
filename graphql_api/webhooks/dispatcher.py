"""The dispatcher: one process per table attempts every pending delivery, in order per object.

Every API process runs one and races for its lease (datastore/feed/lease.py, group
``webhooks``: one holder per table, whatever the number of hosts; a holder that stops
renewing, killed or hung, is replaced once the lease expires). The holder works in rounds,
one organisation at a time:

1. enqueue: the organisation's audit events since its cursor become delivery items
   (datastore/webhooks/outbox.py), before anything is sent. A round started by the change
   feed (an audit event of the organisation, handed on by the live hub) reads from where
   this process got to; a sweep, every ``sweep_seconds`` for every organisation with
   endpoints and first of all after taking the lease, reads back ``reorder_seconds`` before
   the stored cursor, so what a crash, a takeover or a late commit left behind is found.
2. attempt: for each enabled endpoint that has a secret, its oldest pending deliveries
   (``pending_window``); of each object's, only the oldest, and only when it is due and no
   attempt of that object is in flight: so one object's events arrive in order. Attempts
   run on threads, at most ``per_endpoint`` per endpoint, ``per_organisation`` per
   organisation and ``in_all`` at once, so a slow endpoint holds up nothing but itself.

Every DynamoDB call (the lease, the outbox, the endpoints) is awaited on the event loop; only
the POSTs, blocking (graphql_api/auth/outbound.py), run on the dispatcher's threads.

Each attempt re-reads its delivery (strongly consistent) and is recorded on the condition
that nobody recorded one since, then the endpoint's health: failing since when, disabled
(an audit event, ``webhookEndpoint.disable``) once it has failed for ``disable_after_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from datastore.errors import DatastoreError
from datastore.feed.fanout import RECORD, Frame
from datastore.feed.lease import Lease, LeaseLost, holder_name
from datastore.kinds.webhook_entities import WebhookDelivery
from datastore.table.scoped import Table
from datastore.table.store import Datastore
from datastore.tenancy.scope import FeedScope, TenantScope
from datastore.values import items
from datastore.values.ids import OrgId
from datastore.webhooks import outbox
from graphql_api.host.files import start_time
from graphql_api.observability.labels import BoundedLabel
from graphql_api.settings.webhooks import WebhookSettings
from graphql_api.webhooks import metrics, rounds

log = logging.getLogger("hr.webhooks")

GROUP: Final = "webhooks"
# Who the audit trail names for the dispatcher's own writes (an endpoint it disabled).
ACTOR: Final = "webhook-dispatcher"
AUDIT_EVENT: Final = "AuditEvent"


def this_holder() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}-{holder_name(pid, start_time(pid))}"


class Dispatcher:
    def __init__(
        self,
        datastore: Datastore,
        settings: WebhookSettings,
        *,
        allow_private: bool,
        max_tenants: int = 100,
        holder: str | None = None,
    ) -> None:
        self.datastore = datastore
        self.settings = settings
        self.allow_private = allow_private
        self.lease = Lease(datastore.table(FeedScope(GROUP)), GROUP, holder or this_holder(), settings.lease_seconds)
        self._index = datastore.table(outbox.WebhooksScope())
        self._pool = ThreadPoolExecutor(settings.in_all, thread_name_prefix="webhooks")
        self._tenant = BoundedLabel(max_tenants)
        self._wake = asyncio.Event()
        self._dirty: set[OrgId] = set()
        # Where this process's rounds got to in each organisation's trail (its feed-started rounds).
        self._cursors: dict[OrgId, str] = {}
        self._in_flight: set[tuple[str, str, str]] = set()  # (org, endpoint, object)
        self._tasks: set[asyncio.Task[None]] = set()
        self._all = asyncio.Semaphore(settings.in_all)
        self._per_org: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(settings.per_organisation))
        self._per_endpoint: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(settings.per_endpoint))
        self._next_sweep = 0.0
        self.attempts = 0
        self.rounds = 0

    # --- the change feed ------------------------------------------------------------------------

    def on_frame(self, frame: Frame) -> None:
        """A record the stream reader handed on: an audit event starts its organisation's round."""
        if frame.type == RECORD and frame.kind == AUDIT_EVENT and frame.org_id is not None and self.lease.held:
            self.wake(OrgId(frame.org_id))

    def wake(self, org_id: OrgId) -> None:
        self._dirty.add(org_id)
        self._wake.set()

    # --- running --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Hold the lease when it is free and deliver while it is held; until cancelled."""
        try:
            while True:
                await self._hold()
                if not self.lease.held:
                    await asyncio.sleep(self.lease.seconds / 3)
                    continue
                await self._rounds()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=min(1.0, self.lease.seconds / 3))
        finally:
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.shield(self.lease.release())
            self._pool.shutdown(wait=False, cancel_futures=True)
            log.info("webhooks: the dispatcher stopped (%d attempts, %d rounds)", self.attempts, self.rounds)

    async def _hold(self) -> None:
        was = self.lease.held
        try:
            if was:
                await self.lease.renew()
            elif await self.lease.acquire():
                log.info("webhooks: this process (%s) delivers webhooks", self.lease.holder)
                self._cursors.clear()
                self._next_sweep = 0.0  # a sweep first: whatever the last holder left
        except LeaseLost:
            log.warning("webhooks: lost the dispatcher's lease; another process delivers now")
        except DatastoreError as error:
            metrics.ERRORS.inc()
            log.warning("webhooks: the dispatcher's lease could not be read or written: %s", error)
            self.lease.generation = None

    async def _rounds(self) -> None:
        self._wake.clear()
        now = time.monotonic()
        orgs = set(self._dirty)
        self._dirty.clear()
        sweep = now >= self._next_sweep
        if sweep:
            self._next_sweep = now + self.settings.sweep_seconds
            try:
                orgs |= set(await outbox.organisations_with_endpoints(self._index))
            except DatastoreError as error:
                metrics.ERRORS.inc()
                log.warning("webhooks: the organisations with endpoints could not be listed: %s", error)
        for org in sorted(orgs):
            try:
                await self._round(org, sweep=sweep)
            except DatastoreError as error:
                metrics.ERRORS.inc()
                self._dirty.add(org)
                log.warning("webhooks: a round for %s failed: %s", org, error)
        self.rounds += 1

    def _table(self, org: OrgId) -> Table:
        return self.datastore.table(TenantScope(org, ACTOR))

    async def _round(self, org: OrgId, *, sweep: bool) -> None:
        table = self._table(org)
        after = None if sweep else self._cursors.get(org)
        owed = await rounds.collect(table, self.settings, after=after, tenant=self._tenant(org))
        if owed is None:
            self._cursors.pop(org, None)
            return
        if owed.last_event_id is not None:
            self._cursors[org] = max(owed.last_event_id, self._cursors.get(org, ""))
        elif org not in self._cursors and owed.after is not None:
            self._cursors[org] = owed.after
        self._launch(table, org, owed.pending)

    def _launch(self, table: Table, org: OrgId, pending: dict[str, list[WebhookDelivery]]) -> None:
        now = items.now()
        for endpoint_id, deliveries in pending.items():
            # Only each object's oldest: the others wait their turn.
            for delivery in rounds.heads(deliveries):
                slot = (org, endpoint_id, delivery.entity_id)
                if slot in self._in_flight or not rounds.due(delivery, now):
                    continue
                self._in_flight.add(slot)
                task = asyncio.create_task(self._attempt(table, org, endpoint_id, delivery, slot))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _attempt(
        self, table: Table, org: OrgId, endpoint_id: str, listed: WebhookDelivery, slot: tuple[str, str, str]
    ) -> None:
        try:
            async with self._all, self._per_org[org], self._per_endpoint[endpoint_id]:
                if not self.lease.held:
                    return
                attempted = await rounds.attempt(
                    table,
                    endpoint_id,
                    listed.event_id,
                    self.settings,
                    allow_private=self.allow_private,
                    tenant=self._tenant(org),
                    executor=self._pool,
                )
                if attempted.sent:
                    self.attempts += 1
        except DatastoreError as error:
            metrics.ERRORS.inc()
            log.warning("webhooks: an attempt for %s could not be recorded: %s", org, error)
        finally:
            self._in_flight.discard(slot)
            self.wake(org)  # the object's next delivery, if any, is due now
