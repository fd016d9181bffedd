"""Waiting in asyncio tests for something another task or process does, with a bound."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

STEP_SECONDS = 0.02


async def until(condition: Callable[[], bool], seconds: float = 20, what: str = "the condition") -> None:
    """Return once ``condition()`` holds; TimeoutError naming ``what`` after ``seconds``."""
    for _step in range(max(1, int(seconds / STEP_SECONDS))):
        if condition():
            return
        await asyncio.sleep(STEP_SECONDS)
    if not condition():
        raise TimeoutError(f"{what} did not happen within {seconds} s")
