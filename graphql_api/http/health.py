"""/healthz (liveness) and /readyz (readiness), answered before any other middleware.

They sit outside authentication, the body limit and any concurrency cap: a load balancer's
probe never carries a token and must never wait behind request traffic. /healthz does no I/O at
all. /readyz asks DynamoDB (DescribeTable) on a probe client of its own, awaited on the event
loop (datastore/aws/probe.py: its own connections, one attempt), caches the verdict for ``ttl``
seconds and waits at most ``timeout`` for an answer, so it reports an outage within ttl +
timeout (2 s) and a recovery as fast.

In a worker of ``server.py run`` with WORKERS=N, /readyz also reads how many of the server's
workers are serving (a file its supervisor keeps, read through what app.py passes): a pool
short of one is 503 too, with ``workers`` saying how short, so a load balancer and an
operator see a server serving at part of its capacity.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Final, Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from datastore.aws import probe
from datastore.aws.client import AsyncDynamo
from graphql_api.observability.refusals import send_json

HEALTHZ: Final = "/healthz"
READYZ: Final = "/readyz"


class WorkerPool(Protocol):
    """Workers serving, of those their supervisor keeps."""

    @property
    def serving(self) -> int: ...
    @property
    def wanted(self) -> int: ...
    @property
    def short(self) -> bool: ...


class Readiness:
    """The cached verdict on DynamoDB; at most one probe in flight."""

    def __init__(
        self,
        client: AsyncDynamo,
        table_name: str,
        *,
        ttl: float = 1.0,
        timeout: float = 1.0,
        pool: Callable[[], WorkerPool | None] = lambda: None,
    ) -> None:
        # What the supervisor last saw of this server's workers (app.py passes the reader).
        self.pool = pool
        self._client = client
        self._table_name = table_name
        self._ttl = ttl
        self._timeout = timeout
        self._ready = False
        self._checked_at = -math.inf
        self._probe: asyncio.Future[bool] | None = None
        self._probe_started = 0.0

    async def ready(self) -> bool:
        now = time.monotonic()
        if now - self._checked_at < self._ttl:
            return self._ready
        if self._probe is None or self._probe.done():
            check = probe.table_answers(self._client, self._table_name)
            self._probe, self._probe_started = asyncio.ensure_future(check), now
        # A probe that hangs counts as "not ready" once it is `timeout` old; it is not
        # restarted until it ends (the probe client's own timeouts end it within ~1 s).
        waited = max(0.0, self._probe_started + self._timeout - now)
        try:
            ready = await asyncio.wait_for(asyncio.shield(self._probe), waited)
        except TimeoutError:
            ready = False
        self._ready, self._checked_at = ready, time.monotonic()
        return ready

    async def aclose(self) -> None:
        """Cancel a probe in flight and close the probe client's connections on this loop."""
        if self._probe is not None and not self._probe.done():
            self._probe.cancel()
        await self._client.aclose()


class HealthRoutes:
    """ASGI middleware: answers the two health paths itself, passes everything else on."""

    def __init__(self, app: ASGIApp, readiness: Readiness) -> None:
        self.app = app
        self.readiness = readiness

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path == HEALTHZ:
            await _json(send, 200, {"status": "ok"})
        elif path == READYZ:
            dynamodb = await self.readiness.ready()
            body: dict[str, object] = {"dynamodb": dynamodb}
            ready = dynamodb
            if (pool := self.readiness.pool()) is not None:
                body["workers"] = {"serving": pool.serving, "wanted": pool.wanted}
                ready = ready and not pool.short
            await _json(send, 200 if ready else 503, {"status": "ok" if ready else "unavailable", **body})
        else:
            await self.app(scope, receive, send)


async def _json(send: Send, status: int, body: object) -> None:
    await send_json(send, status, body, [(b"cache-control", b"no-store")])
