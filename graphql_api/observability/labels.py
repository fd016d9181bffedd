"""Label values a client chooses, bounded: the first N distinct values, then "other".

Operation names are chosen by clients and tenants are many; each distinct label value is a
time series in Prometheus (and a billed metric in CloudWatch), so a process admits at most
``limit`` distinct values of a label and counts the rest under ``OTHER``. The values are the
first ones seen by the process, which in practice are the regular clients' operations and the
busiest tenants; with N workers a label has at most N x limit values.
"""

from __future__ import annotations

import threading
from typing import Final

OTHER: Final = "other"
MAX_VALUE_LENGTH: Final = 64


class BoundedLabel:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._admitted: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        value = value[:MAX_VALUE_LENGTH]
        if value in self._admitted:
            return value
        with self._lock:
            if value in self._admitted or len(self._admitted) < self.limit:
                self._admitted.add(value)
                return value
        return OTHER
