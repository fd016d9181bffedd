"""Fair tenants: a token bucket of query-cost units per organisation, charged before execution.

Each organisation's bucket holds at most TENANT_COST_BURST units and refills at
TENANT_COST_PER_SECOND. A request is charged what MaxCost found for it (limits/max_cost.py
leaves it on the operation's record; nothing is counted twice), plus WRITE_WEIGHT for each
root field of a mutation that runs (a field under @skip is not charged), and WRITE_WEIGHT for
an Apollo persisted query it will store for the organisation (http/persisted.py). A request the
bucket cannot pay for is refused before any resolver runs, so it makes no DynamoDB call,
with ``RATE_LIMITED`` and ``retryAfter``: the seconds until the bucket will hold the charge.
A refused request takes nothing from the bucket. Either way the response shows the bucket
(``extensions.cost`` by execution/cost.py, the RATE_LIMITED error's extensions here): what it
holds after this request, its capacity and its refill per second, so an app sees how close
it is before it is refused (as GitHub's ``rateLimit`` and Shopify's ``throttleStatus`` do).

In one process the buckets sit in a bounded LRU here: an evicted bucket is simply full
again, which is safe because a bucket untouched long enough to fall out of the LRU has
(almost always) refilled anyway, and the worst case is one extra burst for a tenant that was
idle while MAX_TENANT_BUCKETS other tenants were busy. The workers of one multi-process server
share theirs (limits/shared_buckets.py), so the limit holds per server whichever worker
a connection lands on; both keep a bucket with ``take`` below.

Platform operators are not tenant-bounded (they read the platform's own items, rarely);
anonymous callers have no organisation to charge, and every field that reads tenant data
refuses them.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Protocol

from graphql import GraphQLError
from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext
from strawberry.types.graphql import OperationType

from graphql_api.execution.charge import BucketStatus, Charge, plain_number
from graphql_api.execution.errors import ApiError, Code
from graphql_api.execution.operation import operation_of

# Units a mutation's root field costs on top of its query cost: a write transaction puts 4-6
# items at 2 WCU each, and a partition writes 1,000 WCU/s against 3,000 RCU/s of reads, so
# one write takes 25-35 RCU's worth of a partition, 1,200-1,800 units at about 50 units an
# RCU; rounded down, as people's writes are rare (README "Fair tenants").
WRITE_WEIGHT: Final = 1000
# Buckets kept; a few hundred bytes each (key, entry, bucket), a few megabytes at most.
MAX_TENANT_BUCKETS: Final = 10_000


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


@dataclass(frozen=True, slots=True)
class Admission:
    """A bucket's answer: admitted, or refused with the seconds until it would be; and the
    units the bucket holds after it (less the charge if admitted, untouched if refused)."""

    admitted: bool
    retry_after: float = 0.0
    remaining: float = 0.0


class Buckets(Protocol):
    """Where an organisation's requests are charged: this process's buckets, or its server's."""

    per_second: float
    burst: float

    def charge(self, tenant: str, units: float) -> Admission: ...


def bucket_after(buckets: Buckets, admission: Admission) -> BucketStatus:
    """The bucket as a response shows it after ``admission``."""
    return BucketStatus(admission.remaining, buckets.burst, buckets.per_second)


def take(tokens: float, elapsed: float, units: float, per_second: float, burst: float) -> tuple[float, Admission]:
    """A bucket that held ``tokens`` ``elapsed`` seconds ago, charged ``units``: its tokens now, and the answer.

    A refused charge takes nothing; more than the burst can never be admitted, and its
    ``retry_after`` is the wait for a full bucket.
    """
    tokens = min(burst, tokens + max(0.0, elapsed) * per_second)  # never trust a clock to move forward
    if units <= tokens:
        return tokens - units, Admission(True, remaining=tokens - units)
    return tokens, Admission(False, (min(units, burst) - tokens) / per_second, remaining=tokens)


class TenantBuckets:
    """Token buckets keyed by organisation id, thread-safe, at most ``max_buckets`` of them."""

    def __init__(
        self,
        per_second: float,
        burst: float,
        *,
        max_buckets: int = MAX_TENANT_BUCKETS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_second <= 0 or burst <= 0:
            raise ValueError("a tenant bucket needs a positive rate and burst")
        self.per_second = per_second
        self.burst = burst
        self.max_buckets = max_buckets
        self.clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def charge(self, tenant: str, units: float) -> Admission:
        """Take ``units`` from ``tenant``'s bucket if it holds them; otherwise take nothing."""
        with self._lock:
            now = self.clock()
            bucket = self._buckets.get(tenant)
            if bucket is None:
                bucket = _Bucket(self.burst, now)
                self._buckets[tenant] = bucket
                while len(self._buckets) > self.max_buckets:
                    self._buckets.popitem(last=False)
            else:
                self._buckets.move_to_end(tenant)
            bucket.tokens, admission = take(bucket.tokens, now - bucket.updated, units, self.per_second, self.burst)
            bucket.updated = now
            return admission

    def __len__(self) -> int:
        return len(self._buckets)


def retry_after_seconds(seconds: float) -> float:
    """``retryAfter`` in the response: rounded up to the millisecond, so it is never early."""
    return math.ceil(seconds * 1000) / 1000


def charge_of(execution: ExecutionContext) -> float | None:
    """What a request costs its tenant: MaxCost's figure, plus WRITE_WEIGHT per mutation field
    and for a persisted document to store (one PutItem of at most 16 WCU)."""
    run = operation_of(execution)
    analysis = None if run is None else run.analysis
    if analysis is None:
        return None
    writes = analysis.root_fields if execution.operation_type is OperationType.MUTATION else 0
    if getattr(execution.context, "registration", None) is not None:
        writes += 1
    return float(analysis.cost + WRITE_WEIGHT * writes)


def rate_limited(retry_after: float, charge: float, bucket: BucketStatus) -> ApiError:
    """The refusal of a request its organisation's bucket cannot pay for: when to retry, what
    the request would have cost (``charge``) and what the bucket holds."""
    seconds = retry_after_seconds(retry_after)
    return ApiError(
        Code.RATE_LIMITED,
        f"your organisation is sending more than its share of work; retry after {seconds} s",
        retryable=True,
        retryAfter=seconds,
        charge=plain_number(charge),
        bucket=bucket.extension(),
    )


class TenantRate(SchemaExtension):
    """Charges the request's cost to its session's admission (graphql_api/request/session.py), after MaxCost.

    The charge and the bucket after it are left on the operation's record
    (execution/operation.py) for ``extensions.cost``; a refusal carries them in its own
    extensions, with the query's cost and the limit.
    """

    def on_execute(self) -> Iterator[None]:
        execution = self.execution_context
        session = getattr(execution.context, "session", None)
        # A request refused already (result set) costs nothing.
        if execution.result is None and session is not None:
            charge = charge_of(execution)
            if charge is not None:
                run = operation_of(execution)
                try:
                    bucket = session.admit(charge)
                except ApiError as refused:
                    extensions = refused.extensions
                    analysis = None if run is None else run.analysis
                    if refused.code is Code.RATE_LIMITED and analysis is not None:
                        max_cost = session.services.settings.max_cost
                        extensions = {**extensions, "queryCost": analysis.cost, "maxQueryCost": max_cost}
                    error = GraphQLError(str(refused), extensions=extensions)
                    execution.result = GraphQLExecutionResult(data=None, errors=[error])
                else:
                    if run is not None:
                        run.charge = Charge(charge, bucket)
        yield
