"""Waiting in asyncio tests for something another task or process does, with a bound."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

STEP_SECONDS = 0.02


async def until(
    condition: Callable[[], bool | Awaitable[bool]], seconds: float = 20, what: str = "the condition"
) -> None:
    """Return once ``condition()`` holds (a coroutine function's is awaited: a datastore read);
    TimeoutError naming ``what`` after ``seconds``."""
    for _step in range(max(1, int(seconds / STEP_SECONDS))):
        if await _holds(condition):
            return
        await asyncio.sleep(STEP_SECONDS)
    if not await _holds(condition):
        raise TimeoutError(f"{what} did not happen within {seconds} s")


async def _holds(condition: Callable[[], bool | Awaitable[bool]]) -> bool:
    held = condition()
    return bool(await held) if inspect.isawaitable(held) else bool(held)
