"""/healthz (liveness) and /readyz (readiness), answered before any other middleware.

They sit outside authentication, the body limit and any concurrency cap: a load balancer's
probe never carries a token and must never wait behind request traffic. /healthz does no
I/O at all. /readyz asks DynamoDB (DescribeTable) on a probe client and thread of its own
(datastore/probe.py; the client is made in that thread at the first /readyz, which keeps
building it off a starting process's path to its first answer), caches the verdict for
``ttl`` seconds and waits at most ``timeout`` for an answer, so it reports an outage within
ttl + timeout (2 s) and a recovery as fast.

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
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Final, Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from datastore import probe
from graphql_api.http.raw import send_json

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

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
        client: Callable[[], DynamoDBClient],
        table_name: str,
        *,
        ttl: float = 1.0,
        timeout: float = 1.0,
        pool: Callable[[], WorkerPool | None] = lambda: None,
    ) -> None:
        # What the supervisor last saw of this server's workers (app.py passes the reader).
        self.pool = pool
        self._make_client = client
        self._client: DynamoDBClient | None = None
        self._table_name = table_name
        self._ttl = ttl
        self._timeout = timeout
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="readiness-probe")
        self._ready = False
        self._checked_at = -math.inf
        self._probe: asyncio.Future[bool] | None = None
        self._probe_started = 0.0

    async def ready(self) -> bool:
        now = time.monotonic()
        if now - self._checked_at < self._ttl:
            return self._ready
        if self._probe is None or self._probe.done():
            loop = asyncio.get_running_loop()
            self._probe, self._probe_started = loop.run_in_executor(self._executor, self._check), now
        # A probe that hangs counts as "not ready" once it is `timeout` old; it is not
        # restarted until it ends (the probe client's own timeouts end it within ~1 s).
        waited = max(0.0, self._probe_started + self._timeout - now)
        try:
            ready = await asyncio.wait_for(asyncio.shield(self._probe), waited)
        except TimeoutError:
            ready = False
        self._ready, self._checked_at = ready, time.monotonic()
        return ready

    def _check(self) -> bool:
        """In the probe's own thread, which alone touches the client."""
        if self._client is None:
            self._client = self._make_client()
        return probe.table_ready(self._client, self._table_name)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


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
