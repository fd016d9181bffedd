"""The one runner for blocking work that is no DynamoDB call: a JWKS fetch, an ID token's check.

DynamoDB's calls are awaited on the event loop (datastore/table/scoped.py). What still blocks runs
here: the token check against a JWKS (backend.py), the sign-in exchange's ID token check
(signin.py), an identity provider's discovery document (setIdentityProvider) and API
Gateway's management API (subscriptions/gateway.py). On the process's pool of its own
(``ApiSettings.io_threads``), never on the event loop nor asyncio's default pool, with the
caller's context copied so its request id follows the work.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import Executor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class BlockingRunner:
    def __init__(self, executor: Executor) -> None:
        self.executor = executor

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(context.run, fn, *args, **kwargs))
