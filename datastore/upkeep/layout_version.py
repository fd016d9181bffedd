"""The table's data-layout version: which release's layout its data is in, checked at start-up.

One item outside every tenant's partitions (``LAYOUT`` / ``#VERSION``, LayoutScope) holds the
version. A table created by ``ensure_table`` is stamped with ``CURRENT`` at once; a table
without the item is *layout 0* when it holds organisations (written by a release from
before versions) and an empty one, which the first server start stamps. ``server.py
migrate`` (datastore/upkeep/migration.py) brings layout 0 to ``CURRENT`` and then stamps it.

A server refuses data in any other layout than its own (``check_at_start``): data from an
earlier release lacks what this one reads (name entries, counters, domains), so it would
answer wrong without an error; data from a later release may hold what this one would
misread or overwrite. ``SERVE_UNMIGRATED_DATA`` serves it anyway, with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from datastore.config import SERVE_UNMIGRATED_DATA
from datastore.errors import Conflict
from datastore.kinds import layout
from datastore.kinds.bookkeeping import LayoutStamp
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.table.transact import put
from datastore.tenancy.scope import LayoutScope, PlatformScope
from datastore.tenants import organizations
from datastore.values import items

# The layout this release reads and writes. Raise it with each change to what is stored that
# older data lacks, with its steps in datastore/upkeep/migration.py and a line in LAYOUTS.
CURRENT: Final = 2
LAYOUTS: Final = {
    0: "written before layout versions: without name entries, application counters and email domains",
    1: "name entries, application counters, organisations own their email domains",
    2: "audit events carry their expiry (expiresAt: the organisation's audit retention)",
}
MIGRATE_COMMAND: Final = "python server.py migrate"


class LayoutMismatch(Exception):
    """The table's data is in another layout than this release's; the message says what to do."""


class LayoutChanged(Conflict):
    """The version item was written by someone else since it was read."""


def _layout(table: Table) -> Table:
    return table.with_scope(LayoutScope())


async def stored_version(table: Table) -> int | None:
    """The version item's value (one strongly consistent GetItem); None when there is none."""
    item = await _layout(table).get(layout.LAYOUT_VERSION_ITEM.key_at(), consistent=True)
    return None if item is None else layout.LAYOUT_VERSION_ITEM.read(item).version


async def has_organizations(table: Table) -> bool:
    """Whether the platform holds any organisation (AP14, one Query of one item)."""
    page = await organizations.list_organizations(table.with_scope(PlatformScope()), PageRequest(first=1))
    return bool(page.items)


async def stamp(table: Table, version: int, *, over: int | None) -> None:
    """Record ``version``, on the condition that the item still says ``over`` (None: absent)."""
    item = layout.LAYOUT_VERSION_ITEM.item(LayoutStamp(version, items.now()))
    if over is None:
        condition, values = "attribute_not_exists(PK)", None
    else:
        condition, values = f"{layout.LAYOUT_VERSION} = :over", {":over": items.n(over)}

    def changed(_old: items.Item | None) -> LayoutChanged:
        return LayoutChanged("the table's layout version was changed meanwhile")

    await _layout(table).write([put(item, condition=condition, values=values, on_failed=changed)])


def describe(version: int) -> str:
    return f"layout {version}" + (f" ({LAYOUTS[version]})" if version in LAYOUTS else "")


def mismatch(table_name: str, version: int) -> str:
    """One line: what was read of the table, what this release needs, what to run.

    Layout 0 is not read but inferred (organisations, and no version item): the line says so,
    and claims nothing about what the data lacks, which a table whose item was lost may hold.
    """
    if version == 0:
        found = (
            f"table {table_name} holds organisations but no layout version item, so it is taken for "
            "layout 0 (data of a release before layout versions)"
        )
    else:
        found = f"table {table_name} holds data in {describe(version)}"
    if version < CURRENT:
        return (
            f"{found}; this release reads layout {CURRENT}: stop every server of the earlier release and run "
            f'`{MIGRATE_COMMAND}`, which adds what is missing (README "Upgrading")'
        )
    return (
        f"table {table_name} holds data in layout {version}, written by a later release; this release reads "
        f"layout {CURRENT}: run that release (or a later one)"
    )


@dataclass(frozen=True, slots=True)
class StartupCheck:
    """What the start-up check found: the layout, whether it stamped an empty table, and the
    warning to print when it serves another layout anyway."""

    version: int
    stamped: bool = False
    warning: str | None = None


async def check_at_start(table: Table, *, serve_anyway: bool = False) -> StartupCheck:
    """Refuse (LayoutMismatch) data in another layout than CURRENT, unless ``serve_anyway``.

    An empty table without a version item (one created outside ``ensure_table``, by the
    deployment template) is stamped CURRENT. One GetItem when the table is current; a Query
    more (AP14, one item) and a conditional PutItem for an unstamped one.
    """
    stored = await stored_version(table)
    stamped = False
    if stored is None and not await has_organizations(table):
        try:
            await stamp(table, CURRENT, over=None)
            stamped = True
        except LayoutChanged:
            stored = await stored_version(table)  # another process stamped it (or migrated) meanwhile
    version = CURRENT if stamped else (0 if stored is None else stored)
    if version == CURRENT:
        return StartupCheck(version, stamped=stamped)
    if not serve_anyway:
        raise LayoutMismatch(mismatch(table.name, version) + f"; {SERVE_UNMIGRATED_DATA}=1 serves it anyway")
    until = f"`{MIGRATE_COMMAND}` has run" if version < CURRENT else "the release that wrote it serves it"
    return StartupCheck(
        version,
        warning=(
            f"WARNING: serving table {table.name} in layout {version}, not this release's {CURRENT}, "
            f"because {SERVE_UNMIGRATED_DATA} is on: answers may be wrong or missing until {until}"
        ),
    )
