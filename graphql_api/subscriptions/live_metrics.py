"""Metrics and the end-of-connection log line of live updates (subscriptions over WebSocket and HTTP, the change feed).

Named like the HTTP metrics (observability/metrics.py), and with no label a caller chooses: the
close code is one of the server's few (closing.py), so the series are bounded.
With several workers each gauge is summed over the live workers (``livesum``) but the reader's
lag, which only the worker holding the stream lease knows (``livemax``).

- ``hr_live_connections``, ``hr_live_subscriptions``: open now (sampled every SAMPLE_SECONDS).
- ``hr_live_queued_events``: events waiting for delivery on every connection, summed: the
  slow-consumer bound (SUBSCRIPTION_QUEUE_EVENTS) applies per connection.
- ``hr_live_events_delivered_total``: subscription events sent to subscribers.
- ``hr_live_closes_total{code}``: connections the server closed, by close code (every code
  exported at zero from the start, so ``increase()`` sees the first one).
- ``hr_feed_readers``: processes reading the stream (1 per server instance when healthy, 0 when
  nobody reads: live updates stopped); ``hr_feed_lag_seconds``: how far behind the stream the
  reader hands records on (the age of the newest record of its last read, 0 when that read came
  back empty; DynamoDB dates records to the second); ``hr_feed_records_read_total``.

A connection's end is one log line (``live connection ended``) with the tenant, the close
code (the server's, or the client's going away: ``client``), the transport and its seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, Protocol

from prometheus_client import Counter, Gauge

from graphql_api.subscriptions.closing import Close, Closed

if TYPE_CHECKING:
    from datastore.feed.host import FeedStatus

log = logging.getLogger("hr.live")

# Seconds between two samples of the hub's gauges: a scrape sees figures at most this old.
SAMPLE_SECONDS: Final = 2.0
# The close code of a connection the client ended (or lost).
CLIENT: Final = "client"

CONNECTIONS = Gauge(
    "hr_live_connections", "Live connections open (WebSocket and HTTP streams)", multiprocess_mode="livesum"
)
SUBSCRIPTIONS = Gauge("hr_live_subscriptions", "Subscriptions running on live connections", multiprocess_mode="livesum")
QUEUED = Gauge("hr_live_queued_events", "Events waiting for delivery, all connections", multiprocess_mode="livesum")
DELIVERED = Counter("hr_live_events_delivered", "Subscription events sent to subscribers")
CLOSES = Counter("hr_live_closes", "Live connections the server closed, by close code", ["code"])
FEED_READERS = Gauge("hr_feed_readers", "Processes reading the table's stream", multiprocess_mode="livesum")
FEED_LAG = Gauge(
    "hr_feed_lag_seconds", "Age of the newest stream record the reader last handed on", multiprocess_mode="livemax"
)
FEED_RECORDS = Counter("hr_feed_records_read", "Stream records the reader read")

for _code in sorted({close.code for close in Close}):
    CLOSES.labels(str(_code))


class Watched(Protocol):
    """What the figures read of a live connection (connection.py's LiveConnection, which counts
    its closes here)."""

    @property
    def org_id(self) -> str: ...

    opened: float
    queued: int
    closed: Closed | None


def closed(close: Close) -> None:
    CLOSES.labels(str(close.code)).inc()


def delivered() -> None:
    DELIVERED.inc()


def connection_ended(connection: Watched, transport: str) -> None:
    """The one log line of a live connection's end."""
    why = connection.closed
    fields = {
        "tenant": connection.org_id,
        "transport": transport,
        "code": CLIENT if why is None else why.close.code,
        "seconds": round(time.monotonic() - connection.opened, 3),
    }
    if why is not None:
        fields["reason"] = why.detail
    log.info("live connection ended: %s %s", fields["code"], fields["tenant"], extra={"fields": fields})


class Sampler:
    """Sets the gauges from the hub's state every SAMPLE_SECONDS, until cancelled."""

    def __init__(
        self,
        connections: Callable[[], Iterable[Watched]],
        subscriptions: Callable[[], int],
        feed: FeedStatus | None,
    ) -> None:
        self.connections = connections
        self.subscriptions = subscriptions
        self.feed = feed
        self._records_read = 0

    def sample(self) -> None:
        open_ = list(self.connections())
        CONNECTIONS.set(len(open_))
        QUEUED.set(sum(connection.queued for connection in open_))
        SUBSCRIPTIONS.set(self.subscriptions())
        feed = self.feed
        if feed is None:
            return
        FEED_READERS.set(1 if feed.reading else 0)
        FEED_LAG.set(feed.lag_seconds if feed.reading else 0)
        if feed.records_read > self._records_read:
            FEED_RECORDS.inc(feed.records_read - self._records_read)
        self._records_read = feed.records_read

    async def run(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a figure is never worth the hub's task
                self.sample()
            await asyncio.sleep(SAMPLE_SECONDS)
