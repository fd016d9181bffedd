"""Exporting one organisation: every item it holds, streamed as export_format's lines.

The items come from a walk (datastore/lifecycle/walk.py) over the families that hold
exported kinds: Queries and BatchGetItems, eventually consistent (half the read units of a
strong read), never a Scan. Lines are produced one at a time, so nothing holds the export
whole: the largest thing in memory is a window of small partitions, or one page of a large
one. An item whose kind has no row in datastore/lifecycle/kinds.py stops the export rather
than being left out of it unsaid.

An export read while the organisation is written to is consistent item by item, not as a
whole (no database offers a consistent read of many partitions here): a restore ends with
the counter check (``server.py check-counts``), which repairs a count that moved meanwhile.

Resuming: with ``checkpoint``, a checkpoint line is written every ``every`` items (and at
the end); each names the position of the last item before it and the tally so far, so a
download cut short resumes after it (``Resume``), with no header, and its end line counts
the whole export.

Auditing: ``record`` writes the ``organization.export`` event once the end line is out, so an
export never holds the event of its own making; a restore keeps the event (trail.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from datastore.aws import calls
from datastore.errors import Conflict, NotFound
from datastore.kinds import layout
from datastore.kinds.entities import Organization, OrganizationStatus
from datastore.kinds.model import ENTITY
from datastore.lifecycle import kinds, trail, walk
from datastore.lifecycle.export_format import Header, Record, Tally, checkpoint_line, exported_item, item_line
from datastore.table.scoped import Table
from datastore.upkeep import layout_version
from datastore.values import items
from datastore.values.ids import OrgId
from datastore.writes.changes import Change

# The families an export reads: every one holding an exported kind (tests/datastore/lifecycle
# check this against kinds.py). Persisted documents (a cache), sessions (sign-in state) and
# API key lookup items (credentials) are never read.
FAMILIES: Final = (
    walk.ROOT,
    walk.MEMBERSHIPS,
    walk.APPLICATIONS,
    walk.NAMES,
    walk.AUDIT,
    walk.IDEMPOTENCY,
    walk.IDENTITIES,
    walk.DOMAINS,
    walk.ISSUER_CLIENTS,
)
# Items between two checkpoint lines of a download.
CHECKPOINT_EVERY: Final = 1000
ACTION: Final = "organization.export"


class UnclassifiedKind(Exception):
    """An item of a kind kinds.py does not classify: the export cannot say what to do with it."""


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a download resumes: after ``position``, with ``tally`` already sent."""

    position: walk.Position
    tally: Tally
    exported_at: datetime


async def organization_to_export(table: Table, org_id: OrgId) -> Organization:
    """The organisation, if it may be exported now (one GetItem): NotFound, or Conflict while
    it is being restored (its data is being replaced)."""
    item = await table.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
    if item is None:
        raise NotFound(Organization, org_id)
    organization = layout.ORGANIZATION.read(item)
    if organization.status is OrganizationStatus.RESTORING:
        raise Conflict("the organisation is being restored; export it once the restore has finished")
    return organization


class Export:
    """One export (or one resumed part of a download) of one organisation.

    ``table`` has a LifecycleScope of purpose ``export``. ``meter`` counts the calls and read
    units as the lines are produced; ``tally`` the items written so far (a resumed part's
    includes the parts before it).
    """

    def __init__(
        self,
        table: Table,
        org_id: OrgId,
        *,
        source: str,
        resume: Resume | None = None,
        checkpoint: Callable[[Resume], str] | None = None,
        every: int = CHECKPOINT_EVERY,
        now: datetime | None = None,
        on_record: Callable[[Record], None] = lambda _record: None,
    ) -> None:
        self.table = table
        self.org_id = org_id
        self.source = source
        self.resume = resume
        self.checkpoint = checkpoint
        self.every = every
        # Told of each item as its line is made (the command's CSV of employees).
        self.on_record = on_record
        self.exported_at = resume.exported_at if resume is not None else (now or items.now())
        self.tally = Tally() if resume is None else Tally(resume.tally.kinds.copy())
        self.meter = calls.Meter()
        self.position: walk.Position | None = None if resume is None else resume.position

    def lines(self) -> AsyncIterator[bytes]:
        """The export's lines (header first unless resuming, end line last), metered."""
        return calls.metered(self._lines(), self.meter)

    async def _lines(self) -> AsyncIterator[bytes]:
        if self.resume is None:
            yield Header(self.org_id, layout_version.CURRENT, self.exported_at, self.source).line()
        since_checkpoint = 0
        walking = walk.Walk(self.table, self.org_id, families=FAMILIES)
        async for family, item in walking.items(None if self.resume is None else self.resume.position):
            record = _record(family, item)
            self.position = walk.position_of(family, item)
            if record is None:
                continue
            self.tally.kinds[record.kind] += 1
            self.on_record(record)
            yield item_line(record)
            since_checkpoint += 1
            if self.checkpoint is not None and since_checkpoint >= self.every:
                yield self._checkpoint()
                since_checkpoint = 0
        if self.checkpoint is not None and self.position is not None:
            yield self._checkpoint()
        yield self.tally.line()

    def _checkpoint(self) -> bytes:
        assert self.checkpoint is not None and self.position is not None
        return checkpoint_line(self.checkpoint(Resume(self.position, self.tally, self.exported_at)))


def _record(family: walk.Family, item: items.Item) -> Record | None:
    """The line of an item, or None for a kind that is never exported."""
    tag = item.get(ENTITY, {}).get("S")
    if tag is None or tag not in kinds.POLICIES:
        raise UnclassifiedKind(
            f"an item of kind {tag!r} in {item['PK']['S']!r} has no row in datastore/lifecycle/kinds.py"
        )
    if kinds.policy_of(tag).export is not kinds.Export.INCLUDED:
        return None
    return Record(family.name, tag, exported_item(tag, item))


async def record(table: Table, org_id: OrgId, tally: Tally) -> None:
    """The ``organization.export`` event, in the organisation's audit trail: who exported it
    (``table``'s tenant scope names them; none for an operator) and how many items."""
    change = Change(ACTION, layout.ORGANIZATION.tag, org_id, org_id, None, {"items": items.n(tally.items)})
    await trail.commit(table, [], change)
