"""Label values a client chooses, bounded, so the number of time series stays bounded.

Each distinct label value is a time series in Prometheus (and a billed metric in CloudWatch).

Tenants (``BoundedLabel``): a process admits the first ``limit`` distinct organisations and
counts the rest under ``OTHER``; in practice the first are the busiest. Organisations are
created by platform operators, not by callers, so no caller can mint tenant values.

Operation names (``OperationNames``) are chosen by the caller, so first-come would let one
signed-in caller fill every slot with junk before the real clients' names arrive. A name is a
label only when the server knows it:
- with TRUSTED_DOCUMENTS, the operation names of the manifest's documents and nothing else;
- otherwise the names configured in METRICS_OPERATIONS, plus names the process learns: a name
  of an operation that validated and ran is learned once ``min_tenants`` distinct
  organisations have run it (2 by default), up to ``limit`` learned names, never evicted.
  A caller with one organisation can therefore add nothing; a client's real operations, used
  by every organisation, are learned within their first requests. While a name waits, each
  organisation's pending names are bounded by ``limit`` (its oldest dropped first), so one
  organisation's junk cannot push out what the others are vouching for.
Everything else counts as ``OTHER``. With N workers each process learns on its own, so a
label has at most N x limit learned values (the same names, in practice).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Final

from graphql import GraphQLError, OperationDefinitionNode, parse

OTHER: Final = "other"
MAX_VALUE_LENGTH: Final = 64
# Organisations whose pending names are remembered; the least recently seen is forgotten.
MAX_VOUCHING_TENANTS: Final = 1000


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


class OperationNames:
    """The operation names this process labels metrics with (see the module's docstring)."""

    def __init__(
        self,
        *,
        limit: int,
        min_tenants: int,
        configured: Iterable[str] = (),
        trusted: Iterable[str] | None = None,
    ) -> None:
        names = [*configured, *(trusted or ())]
        self._known: frozenset[str] = frozenset(name[:MAX_VALUE_LENGTH] for name in names)
        # Trusted documents: the manifest is the whole list; nothing is learned.
        self._learning = trusted is None and limit > 0
        self.limit = limit
        self.min_tenants = max(1, min_tenants)
        self._learned: set[str] = set()
        self._vouchers: dict[str, set[str]] = {}  # pending name -> organisations that ran it
        self._pending: OrderedDict[str, OrderedDict[str, None]] = OrderedDict()  # organisation -> its names
        self._lock = threading.Lock()

    def label(self, name: str) -> str:
        name = name[:MAX_VALUE_LENGTH]
        return name if name in self._known or name in self._learned else OTHER

    def ran(self, name: str, tenant: str) -> None:
        """``tenant``'s operation ``name`` validated and ran: one more organisation vouches for it."""
        name = name[:MAX_VALUE_LENGTH]
        if not self._learning or name in self._known or name in self._learned:
            return
        with self._lock:
            if name in self._learned or len(self._learned) >= self.limit:
                return
            vouchers = self._vouchers.setdefault(name, set())
            vouchers.add(tenant)
            if len(vouchers) >= self.min_tenants:
                self._learned.add(name)
                del self._vouchers[name]
                return
            self._remember(tenant, name)

    def _remember(self, tenant: str, name: str) -> None:
        names = self._pending.pop(tenant, None) or OrderedDict()
        self._pending[tenant] = names  # most recently seen last
        names.pop(name, None)
        names[name] = None
        while len(names) > self.limit:
            self._withdraw(tenant, names.popitem(last=False)[0])
        while len(self._pending) > MAX_VOUCHING_TENANTS:
            forgotten, its_names = self._pending.popitem(last=False)
            for pending in its_names:
                self._withdraw(forgotten, pending)

    def _withdraw(self, tenant: str, name: str) -> None:
        vouchers = self._vouchers.get(name)
        if vouchers is not None:
            vouchers.discard(tenant)
            if not vouchers:
                del self._vouchers[name]


def operation_names(documents: Iterable[str]) -> frozenset[str]:
    """The names of the operations ``documents`` define (a trusted documents manifest's texts)."""
    names: set[str] = set()
    for document in documents:
        try:
            definitions = parse(document).definitions
        except GraphQLError:
            continue  # it will be refused when run, under no name
        names.update(
            definition.name.value
            for definition in definitions
            if isinstance(definition, OperationDefinitionNode) and definition.name is not None
        )
    return frozenset(names)
