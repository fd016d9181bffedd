"""Every partition of one organisation, reached with Queries and GetItems only, never a Scan.

A tenant is a set of partition-key families, each reached from items read before it:

    family           partition                         reached from
    root             ORG#<org>                         the organisation's id (every sort key)
    memberships      ORG#<org>#DEPT#<dept>             the root's departments (DEPT#)
    applications     ORG#<org>#JOB#<job>               the root's jobs (JOB#): applications, applicant guards
    names            ORG#<org>#NAME#<prefix>           the root's employees: names.prefixes of their names
    audit            ORG#<org>#AUDIT#<yyyy-mm>         every month from the organisation's id (a ULID: its
                                                       creation time) to now
    idempotency      ORG#<org>#IDEM#<key>              the idempotency keys named by audit events of the
                                                       last ``IDEMPOTENCY_REACH`` (a record lives 24 h)
    sessions         ORG#<org>#SESSION#<emp>           the root's employees (sessions, sign-out marks)
    documents        ORG#<org>#PQ#<slot> / #DOCUMENT   the 4,096 slots, probed by key (offboarding only)
    identities       EMAIL#<email> / #IDENTITY         the root's email pointers and employees' emails
    domains          DOMAIN#<domain> / #DOMAIN         the organisation item's email domains
    api key lookups  APIKEY#<sha256> / #APIKEY         the root's API key records (their hashes)
    issuer clients   ISSUER#<issuer> / CLIENT#<client> the root's identity provider (issuer, client ids)

Refresh token lookups (``REFRESH#<sha256>``) are the one kind no family reaches: keyed by the
hash of a secret nobody keeps, no item of the organisation names them. They expire by the
table's TTL (datastore/lifecycle/kinds.py, ``Offboarding.EXPIRE``).

GSI1's partitions (``ORG#<org>#EMP``, ``ORG#<org>#OPEN``, ``ORG#<org>#EMP#<emp>``) hold
projections of items in the table's own partitions, so reading those reaches them. A family
whose partitions are single items outside the tenant's space (identities, domains, lookups)
is read by key with BatchGetItem, and an item there is kept only if its ``orgId`` names the
organisation: the key says nothing of whose it is. So are the document slots: each holds at
most one item, under a fixed sort key.

Families come in this order, partitions in key order within a family, items in sort-key
order within a partition: a walk is deterministic, and a ``Position`` (family, partition
key, sort key) resumes one after the last item it saw. Root and audit partitions are read
page by page; the small partitions of the fan-out families are read ``window`` at a time on
a thread pool, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, TypeVar

from datastore.kinds import layout
from datastore.kinds.model import ENTITY, Layout
from datastore.table.scoped import BATCH_GET_LIMIT, Table
from datastore.tenancy import keys
from datastore.values import items, names
from datastore.values.ids import OrgId, id_time
from datastore.values.items import Item
from datastore.writes import idempotency

# Items per Query call of a large partition (DynamoDB cuts pages at 1 MB anyway).
PAGE: Final = 1000
# Small partitions (or batches of 100 keys) read at once, in order, on the walk's threads.
WINDOW: Final = 16
T = TypeVar("T")
# How far back audit events are read for idempotency keys: a record lives RECORD_TTL, and the
# table's TTL deletes an expired one "typically within a few days" (AWS): a week more. A
# record older than this is expired (no retry can replay it) and TTL removes it.
IDEMPOTENCY_REACH: Final = idempotency.RECORD_TTL + timedelta(days=7)
# Persisted documents live in 16**3 slots per organisation (datastore/tenants/persisted_documents.py).
DOCUMENT_SLOTS: Final = 16**keys.DOCUMENT_SLOT_DIGITS


@dataclass(frozen=True, slots=True)
class Position:
    """Where a walk was: the family, partition key and sort key of the last item it gave."""

    family: str
    pk: str
    sk: str


@dataclass
class Found:
    """The partitions an organisation's root and audit trail name, collected as they are read."""

    org_id: OrgId
    now: datetime
    departments: set[str] = field(default_factory=set)
    jobs: set[str] = field(default_factory=set)
    prefixes: set[str] = field(default_factory=set)
    emails: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    secret_hashes: set[str] = field(default_factory=set)
    idempotency_keys: set[str] = field(default_factory=set)
    employees: set[str] = field(default_factory=set)
    # (issuer, client id) of the organisation's identity provider's clients.
    issuer_clients: set[tuple[str, str]] = field(default_factory=set)
    # Employees that are tombstones (erased): a restore erases them again.
    erased: set[str] = field(default_factory=set)

    def note_root(self, item: Item) -> None:
        tag = item.get(ENTITY, {}).get("S")
        if tag == layout.DEPARTMENT.tag:
            self.departments.add(layout.DEPARTMENT.read(item).dept_id)
        elif tag == layout.JOB_POSTING.tag:
            self.jobs.add(item[layout.JOB_ID]["S"])
        elif tag == layout.EMPLOYEE.tag:
            employee = layout.EMPLOYEE.read(item)
            self.employees.add(employee.emp_id)
            self.prefixes.update(names.prefixes(employee.first_name, employee.last_name))
            if employee.email:
                self.emails.add(employee.email)
            if employee.erased_at is not None:
                self.erased.add(employee.emp_id)
        elif tag == layout.EMAIL_POINTER.tag:
            self.emails.add(item[keys.SK]["S"].removeprefix(layout.EMAIL_POINTER.sort_prefix))
        elif tag == layout.ORGANIZATION.tag:
            self.domains.update(layout.ORGANIZATION.read(item).email_domains)
        elif tag == layout.API_KEY.tag and layout.SECRET_HASH in item:
            self.secret_hashes.add(item[layout.SECRET_HASH]["S"])
        elif tag == layout.IDENTITY_PROVIDER.tag:
            provider = layout.IDENTITY_PROVIDER.read(item)
            self.issuer_clients.update((provider.issuer, client_id) for client_id in provider.client_ids)

    def note_audit(self, item: Item) -> None:
        key = item.get("idempotencyKey", {}).get("S")
        if key is not None and self.within_reach(item):
            self.idempotency_keys.add(key)

    def within_reach(self, event: Item) -> bool:
        return items.parse_timestamp(event["occurredAt"]["S"]) >= self.now - IDEMPOTENCY_REACH

    def audit_months(self) -> list[str]:
        """Every month bucket from the organisation's creation (its id's time) to now."""
        first, last = keys.audit_bucket(id_time(self.org_id)), keys.audit_bucket(self.now)
        months = [last]
        while months[-1] > first:
            months.append(keys.previous_audit_bucket(months[-1]))
        return sorted(months)

    def reach_months(self) -> list[str]:
        """The month buckets that may hold events within IDEMPOTENCY_REACH."""
        since = keys.audit_bucket(self.now - IDEMPOTENCY_REACH)
        return [month for month in self.audit_months() if month >= since]


@dataclass(frozen=True)
class Family:
    """Partitions of one shape, reached from what was read before them (module docstring)."""

    name: str
    # The partition template its partitions share (a key template of layout.py).
    template: str
    # The partition keys to read, in key order, from what was found so far.
    partitions: Callable[[Found], list[str]]
    # Single items outside the tenant's space, read by key (``key`` gives each one's).
    by_key: Callable[[Found], list[keys.Key]] | None = None
    # Read page by page as it goes (root, audit); the others a whole partition at a time.
    large: bool = False


def _template(kind: Layout[Any]) -> str:
    assert kind.key is not None, kind.tag
    return kind.key[0]


def _root(found: Found) -> list[str]:
    return [keys.org_pk(found.org_id)]


def _single(kind: Layout[Any], values: Callable[[Found], Iterable[str]]) -> Callable[[Found], list[keys.Key]]:
    return lambda found: [kind.key_at(value) for value in sorted(values(found))]


ROOT: Final = Family("root", "ORG#{org_id}", _root, large=True)
MEMBERSHIPS: Final = Family(
    "memberships",
    _template(layout.MEMBERSHIP),
    lambda found: [layout.MEMBERSHIP.partition(found.org_id, dept) for dept in sorted(found.departments)],
)
APPLICATIONS: Final = Family(
    "applications",
    _template(layout.APPLICATION),
    lambda found: [layout.APPLICATION.partition(found.org_id, job) for job in sorted(found.jobs)],
)
NAMES: Final = Family(
    "names",
    _template(layout.NAME_ENTRY),
    lambda found: [layout.NAME_ENTRY.partition(found.org_id, prefix) for prefix in sorted(found.prefixes)],
)
AUDIT: Final = Family(
    "audit",
    _template(layout.AUDIT_EVENT),
    lambda found: [layout.AUDIT_EVENT.partition(found.org_id, month) for month in found.audit_months()],
    large=True,
)
IDEMPOTENCY: Final = Family(
    "idempotency",
    _template(layout.IDEMPOTENCY),
    lambda found: [layout.IDEMPOTENCY.partition(found.org_id, key) for key in sorted(found.idempotency_keys)],
)
SESSIONS: Final = Family(
    "sessions",
    _template(layout.SESSION),
    lambda found: [layout.SESSION.partition(found.org_id, emp) for emp in sorted(found.employees)],
)
# Who is connected over API Gateway's WebSocket API (datastore/tenants/live_connections.py): one partition.
LIVE: Final = Family(
    "live connections",
    _template(layout.GATEWAY_CONNECTION),
    lambda found: [layout.GATEWAY_CONNECTION.partition(found.org_id)],
)
DOCUMENTS: Final = Family(
    "documents",
    _template(layout.PERSISTED_DOCUMENT),
    lambda found: [],
    # A slot holds one document at most, under a fixed sort key: 4,096 keys, 100 a BatchGetItem.
    by_key=lambda found: [
        layout.PERSISTED_DOCUMENT.key_at(found.org_id, f"{slot:0{keys.DOCUMENT_SLOT_DIGITS}x}")
        for slot in range(DOCUMENT_SLOTS)
    ],
)
IDENTITIES: Final = Family(
    "identities",
    _template(layout.IDENTITY),
    lambda found: [],
    by_key=_single(layout.IDENTITY, lambda found: found.emails),
)
DOMAINS: Final = Family(
    "domains",
    _template(layout.EMAIL_DOMAIN),
    lambda found: [],
    by_key=_single(layout.EMAIL_DOMAIN, lambda found: found.domains),
)
API_KEY_LOOKUPS: Final = Family(
    "api key lookups",
    _template(layout.API_KEY_LOOKUP),
    lambda found: [],
    by_key=_single(layout.API_KEY_LOOKUP, lambda found: found.secret_hashes),
)
ISSUER_CLIENTS: Final = Family(
    "issuer clients",
    _template(layout.ISSUER_CLIENT),
    lambda found: [],
    by_key=lambda found: [
        layout.ISSUER_CLIENT.key_at(issuer, client) for issuer, client in sorted(found.issuer_clients)
    ],
)

# Every family, in walk order: each is reached from families before it.
FAMILIES: Final = (
    ROOT,
    MEMBERSHIPS,
    APPLICATIONS,
    NAMES,
    AUDIT,
    IDEMPOTENCY,
    SESSIONS,
    LIVE,
    DOCUMENTS,
    IDENTITIES,
    DOMAINS,
    API_KEY_LOOKUPS,
    ISSUER_CLIENTS,
)
FAMILY_NAMES: Final = tuple(family.name for family in FAMILIES)


def family_named(name: str) -> Family:
    for family in FAMILIES:
        if family.name == name:
            return family
    raise KeyError(name)


def position_of(family: Family, item: Item) -> Position:
    return Position(family.name, item[keys.PK]["S"], item[keys.SK]["S"])


def _after(position: Position | None, family_index: int, pk: str, sk: str | None = None) -> bool:
    """Whether (family, pk, sk) comes after ``position`` (everything does without one)."""
    if position is None:
        return True
    at = FAMILY_NAMES.index(position.family)
    if family_index != at:
        return family_index > at
    if sk is None:  # a whole partition: after, or the one the position is in
        return pk >= position.pk
    return (pk, sk) > (position.pk, position.sk)


class Walk:
    """One walk over one organisation's partitions in a Table whose scope may read them."""

    def __init__(
        self,
        table: Table,
        org_id: OrgId,
        *,
        families: Sequence[Family] = FAMILIES,
        now: datetime | None = None,
        consistent: bool = False,
        window: int = WINDOW,
        on_foreign: Callable[[Item], None] = lambda _item: None,
        found: Found | None = None,
    ) -> None:
        self.table = table
        # What names the partitions: collected as the root and audit trail are read, or given.
        self.found = found if found is not None else Found(org_id, now or items.now())
        self.families = families
        self.consistent = consistent
        self.window = window
        # Told of each item outside the tenant's space that names another organisation.
        self.on_foreign = on_foreign

    def __aiter__(self) -> AsyncIterator[tuple[Family, Item]]:
        return self.items()

    async def items(self, after: Position | None = None) -> AsyncIterator[tuple[Family, Item]]:
        """Every item of the chosen families, in walk order, after ``after`` (all without)."""
        for index, family in enumerate(FAMILIES):
            wanted = family in self.families
            if family is ROOT:
                # The root names every other family: read whole, given from the position on.
                async for item in self._partition(keys.org_pk(self.found.org_id)):
                    self.found.note_root(item)
                    if wanted and _after(after, index, item[keys.PK]["S"], item[keys.SK]["S"]):
                        yield family, item
                continue
            if family is AUDIT:
                async for pair in self._audit(index, wanted, after):
                    yield pair
                continue
            if not wanted or not _after_family(after, index):
                continue
            if family.by_key is not None:
                async for item in self._by_key(family, index, after):
                    yield family, item
            else:
                async for pair in self._fan_out(family, index, after):
                    yield pair

    async def of_family(self, family: Family) -> AsyncIterator[Item]:
        """One family's items, from what ``found`` names already (no other family is read)."""
        index = FAMILIES.index(family)
        if family is ROOT:
            async for item in self._partition(keys.org_pk(self.found.org_id)):
                yield item
        elif family is AUDIT:
            for month in self.found.audit_months():
                async for item in self._partition(layout.AUDIT_EVENT.partition(self.found.org_id, month)):
                    yield item
        elif family.by_key is not None:
            async for item in self._by_key(family, index, None):
                yield item
        else:
            async for _family, item in self._fan_out(family, index, None):
                yield item

    # --- reading -------------------------------------------------------------------------------

    async def _partition(self, partition_key: str, after_sk: str | None = None) -> AsyncIterator[Item]:
        """One partition's items in sort-key order, page by page."""
        start = None if after_sk is None else {keys.PK: partition_key, keys.SK: after_sk}
        while True:
            result = await self.table.query(partition_key, limit=PAGE, start_key=start, consistent=self.consistent)
            for item in result.items:
                yield item
            if not result.has_more:
                return
            start = Table.start_key_of(result.items[-1])

    async def _audit(self, index: int, wanted: bool, after: Position | None) -> AsyncIterator[tuple[Family, Item]]:
        """The audit trail, month by month; events within reach name idempotency records."""
        need_keys = IDEMPOTENCY in self.families and _after_family(after, FAMILIES.index(IDEMPOTENCY))
        reach = set(self.found.reach_months()) if need_keys else set()
        for month in self.found.audit_months():
            partition_key = layout.AUDIT_EVENT.partition(self.found.org_id, month)
            emitting = wanted and _after(after, index, partition_key)
            if not emitting and month not in reach:
                continue
            async for item in self._partition(partition_key):
                if month in reach:
                    self.found.note_audit(item)
                if emitting and _after(after, index, partition_key, item[keys.SK]["S"]):
                    yield AUDIT, item

    async def _fan_out(self, family: Family, index: int, after: Position | None) -> AsyncIterator[tuple[Family, Item]]:
        partition_keys = [pk for pk in family.partitions(self.found) if _after(after, index, pk)]

        async def read(pk: str) -> list[Item]:
            resume = after.sk if after is not None and after.family == family.name and after.pk == pk else None
            return [item async for item in self._partition(pk, resume)]

        async for found in _in_order(read, partition_keys, self.window):
            for item in found:
                yield family, item

    async def _by_key(self, family: Family, index: int, after: Position | None) -> AsyncIterator[Item]:
        assert family.by_key is not None
        wanted = [key for key in family.by_key(self.found) if _after(after, index, key.pk, key.sk)]
        chunks = [wanted[start : start + BATCH_GET_LIMIT] for start in range(0, len(wanted), BATCH_GET_LIMIT)]
        async for found in _in_order(self.table.batch_get, chunks, self.window):
            for item in found:
                if item is None:
                    continue
                outside = not keys.in_tenant(item[keys.PK]["S"], self.found.org_id)
                if outside and item.get(layout.ORG_ID, {}).get("S") != self.found.org_id:
                    self.on_foreign(item)
                    continue
                yield item


async def survey(table: Table, org_id: OrgId, *, now: datetime | None = None, consistent: bool = False) -> Found:
    """What the root partition and the audit events within reach name: every other family's
    partitions (the root, whole, and at most the last two months of the audit trail)."""
    walking = Walk(table, org_id, families=(), now=now, consistent=consistent)
    found = walking.found
    async for item in walking._partition(keys.org_pk(org_id)):
        found.note_root(item)
    for month in found.reach_months():
        async for item in walking._partition(layout.AUDIT_EVENT.partition(org_id, month)):
            found.note_audit(item)
    return found


def partition_keys(family: Family, found: Found) -> list[str]:
    """The partitions (or, for the single-item families, the items' partitions) of ``family``."""
    if family is ROOT:
        return [keys.org_pk(found.org_id)]
    if family.by_key is not None:
        return [key.pk for key in family.by_key(found)]
    return family.partitions(found)


def _after_family(after: Position | None, index: int) -> bool:
    return after is None or index >= FAMILY_NAMES.index(after.family)


async def _in_order(read: Callable[[Any], Awaitable[T]], work: Sequence[Any], window: int) -> AsyncIterator[T]:
    """``read`` of each of ``work`` as tasks on the loop, at most ``window`` ahead, results in order.

    A walk left unfinished (a download cut short) cancels the reads still in flight."""
    pending: list[asyncio.Task[T]] = []
    position = 0
    try:
        while position < len(work) or pending:
            while position < len(work) and len(pending) < window:
                pending.append(asyncio.ensure_future(read(work[position])))
                position += 1
            yield await pending.pop(0)
    finally:
        for task in pending:
            task.cancel()
