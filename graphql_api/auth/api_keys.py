"""Bearer API keys: who a key speaks for (one GetItem), and recording its use beside the request.

A key's lookup item is read strongly consistent on every request, so a revoked key (or one
whose lookup item is gone) is refused from the very next request. Whether its organisation is
still active is the active check's job (graphql_api/auth/active.py), as for a token.

lastUsedAt is written at most once a minute per key: this process remembers when it last
recorded each key (a bounded LRU), so most requests send nothing, and the conditional
UpdateItem (``datastore.signin.api_keys.record_use``) keeps it to once a minute across processes.
The write runs as a task of its own on the event loop without the request waiting for it (and
outside the request's call log); at most ``max_pending_uses`` run at once (more are skipped: a
later request records the use), and a failed one is logged, never seen by the client.

Under AWS Lambda (``record_inline``) nothing may run after the response: the execution
environment is frozen once the handler returns, so a write left running would be sent
minutes later, if ever. There the request waits for its write (at most once a minute per
key, bounded by the DynamoDB client's timeouts); a failure is still only logged.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable
from typing import Final

from datastore.errors import InvalidInput
from datastore.kinds.entities import ApiKeyGrant, ApiKeyStatus
from datastore.signin import api_keys
from datastore.table.store import Datastore
from datastore.tenancy.scope import ApiKeyScope, TenantScope
from datastore.values import items
from graphql_api.execution.errors import AuthReason, unauthenticated
from graphql_api.lru import Lru
from graphql_api.request.principal import Principal

log = logging.getLogger("hr.api_keys")

# Keys whose last recorded use this process remembers (least recently used forgotten first).
REMEMBERED_KEYS: Final = 10_000
MAX_PENDING_USES: Final = 4


class ApiKeyAuthenticator:
    def __init__(
        self,
        datastore: Datastore,
        *,
        max_pending_uses: int = MAX_PENDING_USES,
        record_inline: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._datastore = datastore
        # The lookup is awaited before the request's session exists (so outside its call log);
        # the use, a write, is recorded by a task beside the request or, with ``record_inline``,
        # awaited by it.
        self._lookup = datastore.table(ApiKeyScope())
        # The use writes in flight: the loop keeps only weak references to its tasks.
        self._writes: set[asyncio.Task[bool]] = set()
        self._max_pending = max_pending_uses
        self._inline = record_inline
        self._clock = clock
        self._recorded: Lru[str, float] = Lru(REMEMBERED_KEYS)
        self._pending = 0

    async def authenticate(self, secret: str) -> Principal:
        """The caller a key names, or UNAUTHENTICATED; a datastore failure propagates."""
        loop = asyncio.get_running_loop()
        try:
            grant = await api_keys.find_grant(self._lookup, secret)
        except InvalidInput:
            raise unauthenticated("invalid API key: not a well-formed key", AuthReason.TOKEN_INVALID) from None
        if grant is None:
            raise unauthenticated("invalid API key", AuthReason.TOKEN_INVALID)
        if grant.status is not ApiKeyStatus.ACTIVE:
            raise unauthenticated("the API key was revoked", AuthReason.TOKEN_INVALID)
        if self._inline:
            await self._record_use_now(grant)
        else:
            self._record_use(loop, grant)
        return Principal(grant.key_id, grant.org_id, grant.role, api_key=True)

    @property
    def pending_uses(self) -> int:
        return self._pending

    def _due(self, grant: ApiKeyGrant) -> bool:
        """Whether this process last recorded the key's use a minute ago or more (or never)."""
        last = self._recorded.get(grant.key_id)
        return last is None or self._clock() - last >= api_keys.LAST_USED_RESOLUTION.total_seconds()

    def _record_use(self, loop: asyncio.AbstractEventLoop, grant: ApiKeyGrant) -> None:
        if not self._due(grant) or self._pending >= self._max_pending:
            return  # recorded within the minute, or bounded: a later request records it
        self._recorded.put(grant.key_id, self._clock())
        self._pending += 1
        table = self._datastore.table(TenantScope(grant.org_id))
        # In a context of its own: the write is not the request's, nor in its call log.
        write = loop.create_task(api_keys.record_use(table, grant.key_id, items.now()), context=contextvars.Context())
        self._writes.add(write)
        write.add_done_callback(self._recorded_use)

    async def _record_use_now(self, grant: ApiKeyGrant) -> None:
        if not self._due(grant):
            return
        self._recorded.put(grant.key_id, self._clock())
        table = self._datastore.table(TenantScope(grant.org_id))
        try:
            await api_keys.record_use(table, grant.key_id, items.now())
        except Exception as error:  # as beside the request: logged, never the client's failure
            _log_failure(error)

    def _recorded_use(self, future: asyncio.Task[bool]) -> None:
        self._writes.discard(future)
        self._pending -= 1
        if not future.cancelled() and (error := future.exception()) is not None:
            _log_failure(error)


def _log_failure(error: BaseException) -> None:
    log.warning("recording an API key's use failed: %s", type(error).__name__)
