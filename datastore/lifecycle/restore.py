"""Restoring one organisation from an export file or from another table, into the live table.

Only the organisation's items change: its partitions and the items outside them that name it
(identities, domain markers, API key lookups, identity provider clients). Sign-in state is
neither exported nor restored: sessions and sign-out marks stay as they are live (a session
of someone the source lacks, or has terminated, ends at its next refresh, whose transaction
checks the employee). Every other organisation's items are never
read or written (the Table's LifecycleScope refuses any other key).

The lock. A restore holds the organisation RESTORING for its whole length: the status is set
with a conditional write (ACTIVE or SUSPENDED before; the time and the status before are kept
on the organisation's item), and every request of its members and keys is refused from the
next one, as for a suspended organisation (graphql_api/auth/active.py). Writes admitted just
before may still land: a request runs at most REQUEST_TIMEOUT_SECONDS, so the restore waits
``drain_seconds`` (by default that and a margin) before reading anything. It does not take
that on trust. Every write commits an audit event in its own transaction, so a write that
landed after the lock shows as an event later than it: the restore waits again while one
appears, gives up (returning the organisation to its status before) if they keep coming, and,
after replacing the data, looks again: a write that landed while it worked makes it replace
everything once more (a pass), since that write's other items may be in partitions already
replaced. The organisation's own item is written last, from the source, which unlocks it.

Replacing. Partition by partition in walk order (datastore/lifecycle/walk.py), the source's
items and the live ones are merged by sort key, both sorted: an item the live table lacks or
holds differently is put, one only the live table holds is deleted, one equal is left alone,
with unconditional BatchWriteItems (nobody else writes the organisation meanwhile). Then each
live partition the source did not have (one the root named before the restore began) is
emptied. Items outside the tenant's space are written one at a time, on the condition that
no other organisation holds them: an email or domain another organisation holds now is found
before anything is written (``preflight``) and the restore is refused with the list. So the
restore is idempotent, and resumable: run again after a failure, it finds the organisation
RESTORING, keeps its lock, and writes only what still differs.

API keys. An export never holds a key's secret hash, so a key restored from a file takes the
live table's hash for the same key if there is one, and otherwise has none and can never
authenticate (a file must not be a credential). A key the live table holds REVOKED stays
revoked whatever the source says. Lookup items are made from the restored records.

Verified first: a file is read through before anything is written, and every item must be
one an export holds, keyed in its family's partitions of the organisation (``_verify``), so
a tampered line is refused with nothing written rather than met by the scope halfway.

Erasures hold: the organisation's erasure records (datastore/lifecycle/erased.py), outside
every partition a restore replaces, are read before the first write (and again at each
pass, for an erasure that ran meanwhile) and applied to every item written, so no source,
and no run interrupted and started again, brings an erased person's data back. Each run
records a tombstone an earlier release left without a record before it writes any of the
organisation's data.

The end: ``counts.check_organization(fix=True)`` (``server.py check-counts``) recounts every
headcount and application counter and repairs any the source held inconsistent (an export of
a live organisation is consistent item by item only); the lifecycle's kept audit events the
trail lacks are put back (trail.py; the live trail's own lifecycle events are never deleted);
then the organisation's item with the restore's own audit event, in one transaction; then the
restore's record (``LIFECYCLE#<org>`` / ``RESTORE#<lockedAt>``). Export, restore into an empty
table and export again give the same item lines, and the restore's event.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final, Protocol

from datastore.errors import Conflict
from datastore.kinds import layout
from datastore.kinds.bookkeeping import RestoreRecord
from datastore.kinds.entities import ApiKeyGrant, ApiKeyStatus, OrganizationStatus
from datastore.kinds.model import ENTITY
from datastore.lifecycle import erased, export, export_format, kinds, trail, walk
from datastore.lifecycle.walk import Family
from datastore.table import transact, updates
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import LifecycleScope, TenantScope, actor_of
from datastore.upkeep import counts, layout_version
from datastore.values import items
from datastore.values.ids import OrgId, new_id_at
from datastore.values.items import Item
from datastore.writes.changes import Change

# Replacing passes before the restore gives up (writes kept landing after the lock).
MAX_PASSES: Final = 3
# Waits for the writes in flight before giving up and unlocking.
DRAIN_ROUNDS: Final = 3
# Beyond a request's deadline, how long a write admitted before the lock may still land
# (botocore's retries of its last call): the command's default drain is the deadline and this.
DRAIN_MARGIN_SECONDS: Final = 5.0
# Items written per BatchWriteItem group (the Table cuts them into calls of 25).
WRITE_GROUP: Final = 500


class Refused(Exception):
    """The restore cannot be done; nothing was written unless the message says otherwise."""


@dataclass(frozen=True, slots=True)
class Partition:
    """One partition of the source: its family, key, and items in sort-key order."""

    family: Family
    pk: str
    items: list[Item]


class Source(Protocol):
    """Where the organisation is restored from."""

    @property
    def description(self) -> str: ...

    async def check(self, org_id: OrgId) -> None:
        """Refused unless the source holds ``org_id`` whole, in this release's layout."""

    def partitions(self) -> AsyncIterator[Partition]:
        """Every partition, in walk order (export.FAMILIES)."""

    def outside(self) -> AsyncIterator[Item]:
        """The items outside the tenant's space: identities, domain markers, provider clients."""


async def _grouped(records: AsyncIterator[tuple[Family, Item]]) -> AsyncIterator[Partition]:
    """The records, in walk order, as partitions: each one's items held together (one
    partition at a time: an organisation's root, a department's, a month of its trail)."""
    current: Partition | None = None
    async for family, item in records:
        pk = item[keys.PK]["S"]
        if current is None or current.family is not family or current.pk != pk:
            if current is not None:
                yield current
            current = Partition(family, pk, [])
        current.items.append(item)
    if current is not None:
        yield current


class FileSource:
    """A file ``server.py export`` wrote (or a download, its parts put together)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def description(self) -> str:
        return f"file {self.path.name}"

    async def check(self, org_id: OrgId) -> None:
        """The whole file read through before anything is written: complete, of ``org_id``,
        in this layout, and every item one the organisation may hold where its family puts it."""
        try:
            with self.path.open("rb") as stream:
                header, records = export_format.read(stream)
                if header.org_id == org_id:
                    for number, record in enumerate(records, start=1):
                        _verify(org_id, record, number)
                else:
                    for _record in records:
                        pass
        except (OSError, export_format.ExportFileError) as error:
            raise Refused(f"{self.path}: {error}; nothing was written") from None
        if header.org_id != org_id:
            raise Refused(f"{self.path} is an export of organisation {header.org_id}, not {org_id}")
        if header.layout != layout_version.CURRENT:
            raise Refused(
                f"{self.path} holds data in layout {header.layout}; this release restores layout "
                f"{layout_version.CURRENT} (restore it with the release that wrote it)"
            )

    async def _records(self) -> AsyncIterator[tuple[Family, Item]]:
        with self.path.open("rb") as stream:
            _header, records = export_format.read(stream)
            for record in records:
                yield walk.family_named(record.family), record.item

    def partitions(self) -> AsyncIterator[Partition]:
        return _grouped(self._records())

    async def outside(self) -> AsyncIterator[Item]:
        async for family, item in self._records():
            if family.by_key is not None:
                yield item


def _verify(org_id: OrgId, record: export_format.Record, number: int) -> None:
    """ExportFileError unless the file's ``number``-th item is one a restore of ``org_id`` may
    write: a family an export has, a kind it includes, and a key in that family's partitions
    of the organisation (or, outside them, an item naming it). A tampered line is refused
    before the first write rather than met by the Table's scope halfway through."""
    where = f"item {number}"
    try:
        family = walk.family_named(record.family)
    except KeyError:
        raise export_format.ExportFileError(f"{where}: no family {record.family!r}") from None
    item = record.item
    tag = item.get(ENTITY, {}).get("S") if isinstance(item.get(ENTITY), dict) else None
    if family not in export.FAMILIES or tag != record.kind or tag not in kinds.POLICIES:
        raise export_format.ExportFileError(
            f"{where}: a {record.kind!r} item is not one an export of {family.name} holds"
        )
    if kinds.policy_of(tag).export is not kinds.Export.INCLUDED:
        raise export_format.ExportFileError(f"{where}: {tag} items are never exported")
    pk, sk = item.get(keys.PK), item.get(keys.SK)
    if not (
        isinstance(pk, dict) and isinstance(pk.get("S"), str) and isinstance(sk, dict) and isinstance(sk.get("S"), str)
    ):
        raise export_format.ExportFileError(f"{where}: no partition and sort key")
    partition = pk["S"]
    literal = family.template.replace("{org_id}", org_id).split("{")[0]
    fixed = "{" not in family.template.replace("{org_id}", "")
    shaped = partition == literal if fixed else partition.startswith(literal)
    names_it = family.by_key is None or item.get(layout.ORG_ID, {}).get("S") == org_id
    if not shaped or not names_it or (family.by_key is None) != keys.in_tenant(partition, org_id):
        raise export_format.ExportFileError(
            f"{where}: {partition} / {sk['S']} is outside organisation {org_id}'s {family.name} partitions"
        )


class TableSource:
    """Another table holding the organisation: one point-in-time recovery restored, say."""

    def __init__(self, table: Table, org_id: OrgId) -> None:
        self.table = table
        self._org_id = org_id

    @property
    def description(self) -> str:
        return f"table {self.table.name}"

    def _walk(self, org_id: OrgId, families: tuple[Family, ...]) -> walk.Walk:
        return walk.Walk(self.table.with_scope(LifecycleScope(org_id, "restore")), org_id, families=families)

    async def check(self, org_id: OrgId) -> None:
        # Read under the restore's own scope (and role): the source may be any table.
        version = await layout_version.stored_version(self.table.with_scope(LifecycleScope(org_id, "restore")))
        if version != layout_version.CURRENT:
            raise Refused(
                f"table {self.table.name} is at layout {version}; this release restores layout {layout_version.CURRENT}"
            )
        reader = self.table.with_scope(LifecycleScope(org_id, "restore"))
        if await reader.get(layout.ORGANIZATION.key_at(org_id), consistent=True) is None:
            raise Refused(f"table {self.table.name} holds no organisation {org_id}")

    def partitions(self) -> AsyncIterator[Partition]:
        return _grouped(self._walk(self._org_id, export.FAMILIES).items())

    async def outside(self) -> AsyncIterator[Item]:
        async for _family, item in self._walk(self._org_id, (walk.IDENTITIES, walk.DOMAINS, walk.ISSUER_CLIENTS)):
            yield item


@dataclass
class Report:
    """What a restore did (and, refused, why)."""

    org_id: OrgId
    source: str
    locked_at: datetime | None = None
    finished_at: datetime | None = None
    written: Counter[str] = field(default_factory=Counter)
    deleted: Counter[str] = field(default_factory=Counter)
    unchanged: Counter[str] = field(default_factory=Counter)
    passes: int = 0
    counters_repaired: int = 0
    # Kept lifecycle events (trail.py) the source's trail lacked, put back.
    events_put_back: int = 0
    # The partition last replaced (the progress callback's).
    partition: str | None = None
    # API keys the source had ACTIVE that the live table holds REVOKED: kept revoked.
    kept_revoked: list[str] = field(default_factory=list)
    # Items outside the tenant's space another organisation took while the restore ran.
    held_elsewhere: list[str] = field(default_factory=list)
    # People erased (an erasure record) whom the source held intact: written as their tombstone.
    erased_again: list[str] = field(default_factory=list)

    def lines(self, seconds: float) -> list[str]:
        """What the command prints."""

        def total(counter: Counter[str]) -> int:
            return sum(counter.values())

        found = [
            f"restored organisation {self.org_id} from {self.source} in {seconds:.1f} s ({self.passes} "
            f"pass{'es' * (self.passes != 1)}): {total(self.written)} items written, {total(self.deleted)} deleted, "
            f"{total(self.unchanged)} unchanged; {self.counters_repaired} counters repaired"
        ]
        if self.events_put_back:
            found.append(f"  {self.events_put_back} audit events of closes, exports, restores and erasures put back")
        found += [f"  API key {key} is REVOKED here and stays revoked" for key in self.kept_revoked]
        found += [f"  {pk} is another organisation's now: not restored" for pk in self.held_elsewhere]
        found += [f"  employee {emp_id} was erased here: restored erased" for emp_id in self.erased_again]
        return found

    def record(self, actor_id: str | None) -> RestoreRecord:
        assert self.locked_at is not None
        return RestoreRecord(
            self.org_id,
            self.locked_at,
            self.source,
            actor_id,
            self.finished_at,
            dict(self.written),
            dict(self.deleted),
            dict(self.unchanged),
            self.passes,
            self.counters_repaired,
        )


def _kind(item: Item) -> str:
    return str(item.get(ENTITY, {}).get("S", "?"))


def _key(item: Item) -> keys.Key:
    return keys.Key(item[keys.PK]["S"], item[keys.SK]["S"])


def _event_floor(at: datetime) -> str:
    """The smallest audit event sort key of an event at or after ``at`` (a ULID's time prefix)."""
    return layout.AUDIT_EVENT.sort_prefix + new_id_at(at)[:10] + "0" * 16


class Restore:
    """One restore of organisation ``org_id`` into ``table``'s table (whose scope is the
    organisation's LifecycleScope of purpose ``restore``)."""

    def __init__(
        self,
        table: Table,
        org_id: OrgId,
        source: Source,
        *,
        drain_seconds: float,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_partition: Callable[[Report], None] = lambda _report: None,
    ) -> None:
        self.table = table
        self.org_id = org_id
        self.source = source
        self.drain_seconds = drain_seconds
        self.sleep = sleep
        self.on_partition = on_partition
        self.report = Report(org_id, source.description)
        self._source_org: Item | None = None
        self._api_keys: list[Item] = []
        self._straggled = False
        # Read before anything is written (run): applied to every item written.
        self.erasures = erased.Erasures({})

    # --- the whole ---------------------------------------------------------------------------

    async def run(self) -> Report:
        await self.source.check(self.org_id)
        self.erasures = erased.Erasures(await erased.recorded(self.table, self.org_id))
        await self.preflight()
        locked_at, fresh = await self._lock()
        self.report.locked_at = locked_at
        # Before any of the organisation's data is written, in every run: a tombstone an
        # earlier release left without a record gets one, so it holds like the others.
        await self._record_tombstones()
        if fresh:
            await self._drain(locked_at)
        for number in range(1, MAX_PASSES + 1):
            self.report.passes = number
            self._straggled = False
            # Read again at every pass: an erasure that landed after the first read (before
            # the lock, or during a pass, whose audit event makes another pass) holds too.
            self.erasures.learn(await erased.recorded(self.table, self.org_id))
            await self._replace(locked_at)
            if not self._straggled and not await self._events_after(locked_at):
                break
        else:
            raise Refused(
                f"writes kept landing in organisation {self.org_id} after it was locked; it stays RESTORING: "
                "run the restore again to finish it"
            )
        self.report.erased_again = sorted(self.erasures.kept_erased)
        tenant = self.table.with_scope(TenantScope(self.org_id, actor_of(self.table.scope)))
        self.report.counters_repaired = len((await counts.check_organization(tenant, fix=True)).drifts)
        self.report.events_put_back = await trail.put_back(self.table, self.org_id)
        # The unlock and the restore's own event, in one transaction: a run again never finds
        # the event while the organisation is locked.
        await trail.commit(tenant, [await self._unlock_op()], self._change())
        self.report.finished_at = items.now()
        record = self.report.record(actor_of(self.table.scope))
        await self.table.write([transact.put(layout.RESTORE_RECORD.item(record))])
        return self.report

    async def _record_tombstones(self) -> None:
        tombstones = (
            item
            for item in await self._live(keys.org_pk(self.org_id))
            if _kind(item) == layout.EMPLOYEE.tag and layout.ERASED_AT in item
        )
        records = dict(self.erasures.records)
        for record in await erased.record_missing(self.table, tombstones, records):
            records[record.emp_id] = record
        self.erasures = erased.Erasures(records)

    # --- before anything is written ------------------------------------------------------------

    async def preflight(self) -> None:
        """Refused, with each of them, when another organisation holds an email, a domain or
        a provider's client id the source has: restoring would take it from them (one GetItem
        each, nothing written)."""
        held = []
        async for item in self.source.outside():
            if self.erasures.apply(item) is None:
                continue  # an erased person's identity: never written
            key = _key(item)
            live = await self.table.get(key, consistent=True)
            if live is not None and live.get(layout.ORG_ID, {}).get("S") != self.org_id:
                # An issuer's partition holds many organisations' clients: name the client too.
                held.append(f"{key.pk} / {key.sk}" if keys.is_issuer_pk(key.pk) else key.pk)
        if held:
            raise Refused(
                f"another organisation now holds {len(held)} of the emails, domains or client ids the source has "
                f"({', '.join(sorted(held))}); nothing was written"
            )

    # --- the lock -------------------------------------------------------------------------------

    async def _lock(self) -> tuple[datetime, bool]:
        """Lock the organisation: (when, and whether just now rather than by an earlier run)."""
        key = layout.ORGANIZATION.key_at(self.org_id)
        found = await self.table.get(key, consistent=True)
        now = items.now()
        if found is None:
            # Nobody can be writing an organisation that does not exist: the source's item,
            # locked, marks it as being restored (a run again resumes it).
            source = await self._source_organization()
            organization = layout.ORGANIZATION.read(source)
            locked = replace(
                organization, status=OrganizationStatus.RESTORING, locked_at=now, status_before_lock=organization.status
            )
            await self._write_condition(layout.ORGANIZATION.item(locked), "attribute_not_exists(PK)")
            return now, False
        current = layout.ORGANIZATION.read(found)
        if current.status is OrganizationStatus.RESTORING:
            assert current.locked_at is not None
            return current.locked_at, False
        if current.status not in (OrganizationStatus.ACTIVE, OrganizationStatus.SUSPENDED):
            raise Refused(f"organisation {self.org_id} is {current.status.value.upper()}: it cannot be restored")

        def moved(_old: Item | None) -> Conflict:
            return Conflict("the organisation's status changed while the restore locked it; try again")

        await self.table.write(
            [
                transact.update(
                    key,
                    [
                        updates.Set(layout.STATUS, items.s(OrganizationStatus.RESTORING.value)),
                        updates.Set(layout.LOCKED_AT, items.s(items.timestamp(now))),
                        updates.Set("statusBeforeLock", updates.attribute(layout.STATUS)),
                    ],
                    condition="#status = :status",
                    names={"#status": layout.STATUS},
                    values={":status": items.s(current.status.value)},
                    on_failed=moved,
                )
            ]
        )
        return now, True

    async def _drain(self, locked_at: datetime) -> None:
        """Wait for the writes admitted before the lock; unlock and refuse if they keep coming."""
        for _round in range(DRAIN_ROUNDS):
            await self.sleep(self.drain_seconds)  # on the loop: the process's other work goes on
            if not await self._events_after(locked_at, since=items.now() - timedelta(seconds=self.drain_seconds)):
                return
        await self._unlock_as_before()
        raise Refused(
            f"organisation {self.org_id} kept being written after it was locked; it is unlocked again "
            "and nothing was restored: try again when it is quiet"
        )

    async def _events_after(self, locked_at: datetime, *, since: datetime | None = None) -> list[Item]:
        """The live audit events of writes that landed after the lock (or after ``since``)."""
        floor = _event_floor(max(locked_at, since or locked_at))
        found: list[Item] = []
        month, last = keys.audit_bucket(locked_at), keys.audit_bucket(items.now())
        while True:
            partition_key = layout.AUDIT_EVENT.partition(self.org_id, month)
            start = {keys.PK: partition_key, keys.SK: floor}
            answer = (await self.table.query(partition_key, limit=10, start_key=start, consistent=True)).items
            found += [item for item in answer if not trail.is_lifecycle_event(item)]
            if month >= last:
                return found
            month = _next_month(month)

    async def _unlock_as_before(self) -> None:
        found = await self.table.get(layout.ORGANIZATION.key_at(self.org_id), consistent=True)
        if found is None:
            return
        organization = layout.ORGANIZATION.read(found)
        before = organization.status_before_lock or OrganizationStatus.ACTIVE
        unlocked = replace(organization, status=before, locked_at=None, status_before_lock=None)
        await self._write_condition(layout.ORGANIZATION.item(unlocked), "#status = :restoring")

    async def _unlock_op(self) -> transact.Op:
        """The source's organisation item, as it is there: the last write, which unlocks."""
        return _conditional_put(await self._source_organization(), "#status = :restoring")

    def _change(self) -> Change:
        """The restore's audit event: where from, and how many items it wrote and deleted."""
        after = {
            "source": items.s(self.report.source),
            "written": items.n(sum(self.report.written.values())),
            "deleted": items.n(sum(self.report.deleted.values())),
        }
        return Change(trail.RESTORE_ACTION, layout.ORGANIZATION.tag, self.org_id, self.org_id, None, after)

    async def _write_condition(self, item: Item, condition: str) -> None:
        await self.table.write([_conditional_put(item, condition)])

    async def _source_organization(self) -> Item:
        if self._source_org is None:
            async for part in self.source.partitions():
                for item in part.items:
                    if item[keys.SK]["S"] == layout.ORGANIZATION.key_at(self.org_id).sk:
                        self._source_org = item
                        break
                break  # the root partition comes first
        if self._source_org is None:
            raise Refused(f"the source holds no item of organisation {self.org_id}")
        return self._source_org

    # --- replacing ----------------------------------------------------------------------------

    async def _replace(self, locked_at: datetime) -> None:
        """One pass: the source's partitions written over the live ones, then the live ones the
        source lacks emptied."""
        before = await walk.survey(self.table, self.org_id, consistent=True)
        self._api_keys = []
        seen: set[str] = set()
        # Single items outside the tenant's space, by key: an issuer's partition holds the
        # clients of every organisation that registered it.
        seen_outside: set[keys.Key] = set()
        async for part in self.source.partitions():
            if part.family.by_key is not None:
                for item in part.items:
                    wanted = self.erasures.apply(item)
                    if wanted is not None:
                        seen_outside.add(_key(wanted))
                        await self._replace_outside(wanted)
            else:
                seen.add(part.pk)
                await self._replace_partition(part, locked_at)
            self.report.partition = part.pk
            self.on_partition(self.report)
        for item in self._lookups():
            seen_outside.add(_key(item))
            await self._replace_outside(item)
        for family in (*export.FAMILIES, walk.API_KEY_LOOKUPS):
            if family.by_key is not None:
                for key in family.by_key(before):
                    if key not in seen_outside:
                        await self._delete_outside(key)
                continue
            for pk in walk.partition_keys(family, before):
                if pk not in seen:
                    await self._empty(pk, locked_at)

    async def _replace_partition(self, part: Partition, locked_at: datetime) -> None:
        live = await self._live(part.pk)
        puts: list[Item] = []
        deletes: list[keys.Key] = []
        for source_item, live_item in _merged(iter(part.items), iter(live)):
            if source_item is not None and source_item[keys.SK]["S"] == layout.ORGANIZATION.key_at(self.org_id).sk:
                self._source_org = source_item  # written last, as the unlock
                continue
            # What the source holds, with every erasure applied: None, nothing to write.
            wanted = None if source_item is None else self._as_restored(source_item, live_item)
            if wanted is None:
                if live_item is None or (source_item is None and trail.is_lifecycle_event(live_item)):
                    continue  # a lifecycle event the source predates stays in the trail
                self._note_straggler(live_item, locked_at)
                deletes.append(_key(live_item))
                self.report.deleted[_kind(live_item)] += 1
            elif wanted == live_item:
                self.report.unchanged[_kind(wanted)] += 1
            else:
                puts.append(wanted)
                self.report.written[_kind(wanted)] += 1
            if len(puts) + len(deletes) >= WRITE_GROUP:
                await self.table.batch_write(puts, deletes)
                puts, deletes = [], []
        await self.table.batch_write(puts, deletes)

    async def _empty(self, pk: str, locked_at: datetime) -> None:
        deletes: list[keys.Key] = []
        for item in await self._live(pk):
            if trail.is_lifecycle_event(item):
                continue
            self._note_straggler(item, locked_at)
            deletes.append(_key(item))
            self.report.deleted[_kind(item)] += 1
            if len(deletes) >= WRITE_GROUP:
                await self.table.batch_write(deletes=deletes)
                deletes = []
        await self.table.batch_write(deletes=deletes)

    async def _live(self, pk: str) -> list[Item]:
        """The partition's items as they are now, in sort-key order (one partition: an
        organisation's root, a department's, a month of its audit trail)."""
        found: list[Item] = []
        start = None
        while True:
            result = await self.table.query(pk, limit=walk.PAGE, start_key=start, consistent=True)
            found += result.items
            if not result.has_more:
                return found
            start = Table.start_key_of(result.items[-1])

    def _note_straggler(self, item: Item, locked_at: datetime) -> None:
        if _kind(item) == layout.AUDIT_EVENT.tag and item[keys.SK]["S"] >= _event_floor(locked_at):
            self._straggled = True

    def _as_restored(self, original: Item, live: Item | None) -> Item | None:
        """The item to write for the source's ``original``: erased as the erasure records
        say (None: nothing), an API key merged with the live key (below)."""
        source = self.erasures.apply(original)
        if source is None or _kind(source) != layout.API_KEY.tag:
            return source
        merged = dict(source)
        if live is not None:
            if layout.SECRET_HASH not in merged and layout.SECRET_HASH in live:
                merged[layout.SECRET_HASH] = live[layout.SECRET_HASH]
            revoked = ApiKeyStatus.REVOKED.value
            if live[layout.STATUS]["S"] == revoked and merged[layout.STATUS]["S"] != revoked:
                merged[layout.STATUS] = live[layout.STATUS]
                if layout.REVOKED_AT in live:
                    merged[layout.REVOKED_AT] = live[layout.REVOKED_AT]
                if merged[layout.KEY_ID]["S"] not in self.report.kept_revoked:
                    self.report.kept_revoked.append(merged[layout.KEY_ID]["S"])
        self._api_keys.append(merged)
        return merged

    def _lookups(self) -> Iterator[Item]:
        """The lookup item of each restored key that has a hash, made from its record."""
        for record in self._api_keys:
            key = layout.API_KEY.read(record)
            if key.secret_hash is None:
                continue
            grant = ApiKeyGrant(key.org_id, key.key_id, key.role, key.status)
            yield layout.API_KEY_LOOKUP.item(grant, secret_hash=key.secret_hash)

    async def _replace_outside(self, item: Item) -> None:
        """An identity, domain marker or key lookup: put unless another organisation holds it."""
        live = await self.table.get(_key(item), consistent=True)
        if live == item:
            self.report.unchanged[_kind(item)] += 1
            return

        def taken(_old: Item | None) -> Conflict:
            return Conflict("held by another organisation")

        try:
            await self.table.write(
                [
                    transact.put(
                        item,
                        condition="attribute_not_exists(PK) OR #org = :org",
                        names={"#org": layout.ORG_ID},
                        values={":org": items.s(self.org_id)},
                        on_failed=taken,
                    )
                ]
            )
        except Conflict:
            self.report.held_elsewhere.append(_key(item).pk)
            return
        self.report.written[_kind(item)] += 1

    async def _delete_outside(self, key: keys.Key) -> None:
        """A live item outside the tenant's space the source lacks: deleted on the condition
        that it names the organisation still."""
        target = await self.table.get(key, consistent=True)
        if target is None or target.get(layout.ORG_ID, {}).get("S") != self.org_id:
            return
        try:
            await self.table.write(
                [
                    transact.delete(
                        _key(target),
                        condition="#org = :org",
                        names={"#org": layout.ORG_ID},
                        values={":org": items.s(self.org_id)},
                    )
                ]
            )
        except Conflict:
            return  # another organisation's by now: not ours to delete
        self.report.deleted[_kind(target)] += 1


def _conditional_put(item: Item, condition: str) -> transact.Op:
    values = {":restoring": items.s(OrganizationStatus.RESTORING.value)} if ":restoring" in condition else None
    names = {"#status": layout.STATUS} if "#status" in condition else None

    def lost(_old: Item | None) -> Conflict:
        return Conflict("the organisation's item changed while it was locked")

    return transact.put(item, condition=condition, names=names, values=values, on_failed=lost)


def _merged(source: Iterator[Item], live: Iterator[Item]) -> Iterator[tuple[Item | None, Item | None]]:
    """Two partitions' items paired by sort key (each in sort-key order): (source, live)."""
    sentinel = None
    left, right = next(source, sentinel), next(live, sentinel)
    while left is not None or right is not None:
        if right is None or (left is not None and left[keys.SK]["S"] < right[keys.SK]["S"]):
            yield left, None
            left = next(source, sentinel)
        elif left is None or right[keys.SK]["S"] < left[keys.SK]["S"]:
            yield None, right
            right = next(live, sentinel)
        else:
            yield left, right
            left, right = next(source, sentinel), next(live, sentinel)


def _next_month(bucket: str) -> str:
    year, month = int(bucket[:4]), int(bucket[5:7])
    return f"{year + 1:04d}-01" if month == 12 else f"{year:04d}-{month + 1:02d}"
