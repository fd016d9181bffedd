"""What the tenant rate limit charged one operation, as its record keeps it.

TenantRate (limits/tenant_rate.py) charges the operation and leaves its charge on the
operation's record (execution/operation.py), where ``extensions.cost`` reads it
(execution/cost.py); the record runs below the limits, so what it holds is defined here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BucketStatus:
    """An organisation's bucket as a response shows it (``bucket`` in extensions)."""

    remaining: float
    capacity: float
    refill_per_second: float

    def extension(self) -> dict[str, int | float]:
        """Whole units left (rounded down: never more than the bucket holds); the settings as set."""
        return {
            "remaining": math.floor(self.remaining),
            "capacity": plain_number(self.capacity),
            "refillPerSecond": plain_number(self.refill_per_second),
        }


def plain_number(value: float) -> int | float:
    """A whole number as an int (``5``, not ``5.0``), any other as it is."""
    return int(value) if value == int(value) else value


@dataclass(frozen=True, slots=True)
class Charge:
    """What one operation was charged, and its bucket after it (None: it draws on none)."""

    units: float
    bucket: BucketStatus | None
