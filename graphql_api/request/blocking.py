"""The one runner for blocking work outside a request's session: boto3 calls, a JWKS fetch.

The token check (authentication.py), the sign-in exchange (signin.py) and GraphiQL's demo
tokens run their blocking steps here: on the process's I/O pool (the one the sessions'
DynamoDB calls use, DYNAMODB_POOL_SIZE threads), never on the event loop nor asyncio's default
pool, with the caller's context copied so its call log and request id follow the work.
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
