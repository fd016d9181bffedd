"""Offboarding an organisation: closed at once, every item deleted after a grace period.

Closing (``close``): one transaction sets the organisation CLOSING (from ACTIVE or
SUSPENDED), writes its deletion receipt (``LIFECYCLE#<org>`` / ``#DELETION``: who asked, when,
and the time after which its data is deleted) and an ``organization.close`` audit event. Each
offboarding has its own receipt: one of an organisation deleted and restored since is kept
(``DELETION#<closedAt>``) and the new offboarding starts a receipt of its own. From
the next request on, its members' tokens, its API keys and sign-in by SSO are refused (the
active check and the token exchange want an ACTIVE organisation). Its data stays through the
grace period (OFFBOARDING_GRACE_DAYS), so an export can still be taken (``server.py export``)
and a mistake undone.

Deleting (``delete``), once the grace period is over: every item of the organisation is
counted (a walk of every family, strongly consistent) and the counts by kind are written to
the receipt with the time the deletion began; then the families are emptied, derived ones
first and the root last (the root names every other family, so a run again after a failure
still finds what is left), the organisation's own item very last. Items in its partitions go
by BatchWriteItem (nobody writes a CLOSING organisation); items outside them that name it
(identities, email-domain markers, API key lookups, identity provider clients) are deleted
one by one on the condition that they still name it, which releases each email, domain and
client id for anyone. Refresh token lookups, which nothing names, are left to the table's TTL
(at most their session's absolute lifetime); until then a refresh is refused, since its
transaction wants the organisation ACTIVE. Persisted
documents are found by their 4,096 slots. At the end the receipt gets its finishing time.
Resumable: a run again after a failure skips the count (the receipt holds it) and deletes
what is left. Only the organisation's keys are touched: the Table's LifecycleScope refuses
any other, and the receipt, outside its partitions, outlives it.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final

from datastore.errors import Conflict, NotFound
from datastore.kinds import layout
from datastore.kinds.bookkeeping import DeletionReceipt
from datastore.kinds.entities import Organization, OrganizationStatus
from datastore.kinds.model import ENTITY
from datastore.lifecycle import trail, walk
from datastore.table import transact, updates
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import LifecycleScope
from datastore.values import items
from datastore.values.ids import OrgId
from datastore.values.items import Item
from datastore.writes.changes import Change

CLOSE_ACTION: Final = "organization.close"
# Deleted first to last: each family before the ones it is reached from, the root at the end.
DELETE_ORDER: Final = (
    walk.MEMBERSHIPS,
    walk.APPLICATIONS,
    walk.NAMES,
    walk.IDEMPOTENCY,
    walk.AUDIT,
    walk.SESSIONS,
    walk.LIVE,
    walk.DOCUMENTS,
    walk.IDENTITIES,
    walk.DOMAINS,
    walk.API_KEY_LOOKUPS,
    walk.ISSUER_CLIENTS,
    walk.ROOT,
)
# Items deleted per BatchWriteItem group (the Table cuts them into calls of 25).
GROUP: Final = 500


class NotYet(Exception):
    """The organisation cannot be deleted now: the message says why (not closed, or when)."""


@dataclass
class Progress:
    """How far a deletion run has gone: items deleted of those counted."""

    counted: int = 0
    deleted: int = 0


def _scope(table: Table) -> LifecycleScope:
    scope = table.scope
    if not isinstance(scope, LifecycleScope) or scope.purpose != "offboard":
        raise TypeError("offboarding needs the organisation's LifecycleScope of purpose offboard")
    return scope


async def receipt_of(table: Table, org_id: OrgId) -> DeletionReceipt | None:
    item = await table.get(layout.DELETION_RECEIPT.key_at(org_id), consistent=True)
    return None if item is None else layout.DELETION_RECEIPT.read(item)


async def organization_of(table: Table, org_id: OrgId) -> Organization | None:
    """The organisation as it is now (strongly consistent), None once deleted."""
    item = await table.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
    return None if item is None else layout.ORGANIZATION.read(item)


@dataclass(frozen=True, slots=True)
class Closed:
    organization: Organization
    receipt: DeletionReceipt


async def close(table: Table, org_id: OrgId, *, grace: timedelta) -> Closed:
    """Close the organisation (module docstring); closing a CLOSING one changes nothing.

    NotFound when there is no such organisation; Conflict while it is being restored.
    """
    scope = _scope(table)
    found = await table.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
    if found is None:
        raise NotFound(Organization, org_id)
    organization = layout.ORGANIZATION.read(found)
    existing = await receipt_of(table, org_id)
    if organization.status is OrganizationStatus.CLOSING and existing is not None and existing.finished_at is None:
        return Closed(organization, existing)
    # CLOSING with a finished receipt: restored from an export taken while it was closing.
    reopened = organization.status is OrganizationStatus.CLOSING and existing is not None
    if organization.status not in (OrganizationStatus.ACTIVE, OrganizationStatus.SUSPENDED) and not reopened:
        raise Conflict(f"the organisation is {organization.status.value.upper()}: it cannot be closed now")
    at = items.now()
    receipt = DeletionReceipt(org_id, organization.name, scope.actor_id, at, at + grace)
    closing = replace(organization, status=OrganizationStatus.CLOSING)
    closed = layout.ORGANIZATION.item(closing)

    def moved(_old: Item | None) -> Conflict:
        return Conflict("the organisation changed while it was being closed; try again")

    ops = [
        transact.update(
            layout.ORGANIZATION.key_at(org_id),
            [updates.Set(layout.STATUS, items.s(OrganizationStatus.CLOSING.value))],
            condition="#status = :status",
            names={"#status": layout.STATUS},
            values={":status": items.s(organization.status)},
            on_failed=moved,
        ),
        # A receipt left by an offboarding that never finished deleting is replaced.
        transact.put(layout.DELETION_RECEIPT.item(receipt)),
    ]
    if existing is not None and existing.finished_at is not None:
        # The organisation was deleted and restored since: that offboarding's receipt is
        # kept, and this one gets its own.
        ops.append(transact.put(layout.FORMER_DELETION.item(existing)))
    await trail.commit(table, ops, Change(CLOSE_ACTION, layout.ORGANIZATION.tag, org_id, org_id, found, closed))
    return Closed(closing, receipt)


async def delete(
    table: Table,
    org_id: OrgId,
    *,
    now: datetime | None = None,
    on_progress: Callable[[Progress], None] = lambda _progress: None,
) -> DeletionReceipt:
    """Delete every item of a closed organisation whose grace period is over (module docstring).

    NotYet when it was never closed or its grace period runs on; a finished deletion is
    returned as it is.
    """
    _scope(table)
    receipt = await receipt_of(table, org_id)
    if receipt is None:
        raise NotYet(f"organisation {org_id} is not closed: close it first (closeOrganization, server.py offboard)")
    if receipt.finished_at is not None:
        return receipt
    now = now or items.now()
    if now < receipt.delete_after:
        raise NotYet(
            f"organisation {org_id} is closed; its data is deleted after {items.timestamp(receipt.delete_after)}"
        )
    organization = await table.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
    if organization is not None and layout.ORGANIZATION.read(organization).status is not OrganizationStatus.CLOSING:
        raise NotYet(f"organisation {org_id} is not CLOSING any more: close it again to delete it")
    if not receipt.counted:
        receipt = await _count(table, org_id, receipt, now)
    progress = Progress(counted=sum(receipt.deleted.values()))
    on_progress(progress)
    # The root names every other family and is deleted last: one survey serves them all.
    found = await walk.survey(table, org_id, consistent=True, now=now)
    for family in DELETE_ORDER:
        await _empty_family(table, org_id, family, found, progress, on_progress)
    finished = replace(receipt, finished_at=items.now())
    await table.write([transact.put(layout.DELETION_RECEIPT.item(finished))])
    return finished


async def _count(table: Table, org_id: OrgId, receipt: DeletionReceipt, now: datetime) -> DeletionReceipt:
    """Every item, counted by kind once, before anything is deleted: what the receipt says."""
    tally: Counter[str] = Counter()
    async for _family, item in walk.Walk(table, org_id, families=DELETE_ORDER, consistent=True, now=now):
        tally[item.get(ENTITY, {}).get("S", "?")] += 1
    counted = replace(receipt, started_at=items.now(), deleted=dict(sorted(tally.items())))

    def raced(_old: Item | None) -> Conflict:
        return Conflict("another deletion of the organisation began meanwhile; run it again")

    await table.write(
        [
            transact.put(
                layout.DELETION_RECEIPT.item(counted),
                condition="attribute_not_exists(startedAt)",
                on_failed=raced,
            )
        ]
    )
    return counted


async def _empty_family(
    table: Table,
    org_id: OrgId,
    family: walk.Family,
    found: walk.Found,
    progress: Progress,
    on_progress: Callable[[Progress], None],
) -> None:
    """Delete what is left of one family, reached from what the root named."""
    walking = walk.Walk(table, org_id, families=(family,), consistent=True, found=found)
    pending: list[keys.Key] = []
    organization: keys.Key | None = None
    async for item in walking.of_family(family):
        key = keys.Key(item[keys.PK]["S"], item[keys.SK]["S"])
        if family.by_key is not None and not keys.in_tenant(key.pk, org_id):
            await _release(table, org_id, key)
            progress.deleted += 1
            on_progress(progress)
            continue
        if key == layout.ORGANIZATION.key_at(org_id):
            organization = key  # the very last item deleted
            continue
        pending.append(key)
        if len(pending) >= GROUP:
            await _delete_group(table, pending, progress, on_progress)
            pending = []
    await _delete_group(table, pending, progress, on_progress)
    if organization is not None:
        await _delete_group(table, [organization], progress, on_progress)


async def _delete_group(
    table: Table, pending: list[keys.Key], progress: Progress, on_progress: Callable[[Progress], None]
) -> None:
    if not pending:
        return
    await table.batch_write(deletes=pending)
    progress.deleted += len(pending)
    on_progress(progress)


async def _release(table: Table, org_id: OrgId, key: keys.Key) -> None:
    """An identity, domain marker or key lookup, deleted if it still names the organisation."""
    # Another organisation's by now (Conflict): not this one's to release.
    with contextlib.suppress(Conflict):
        await table.write(
            [
                transact.delete(
                    key,
                    condition="#org = :org",
                    names={"#org": layout.ORG_ID},
                    values={":org": items.s(org_id)},
                )
            ]
        )


def describe(receipt: DeletionReceipt) -> list[str]:
    """The receipt as ``server.py offboard`` prints it."""

    def at(value: datetime | None) -> str:
        return "-" if value is None else items.timestamp(value)

    lines = [
        f"organisation {receipt.org_id} ({receipt.org_name}), closed {at(receipt.closed_at)} by "
        f"{receipt.requested_by or 'the platform'}; deletion after {at(receipt.delete_after)}",
        f"  deletion began {at(receipt.started_at)}, finished {at(receipt.finished_at)}",
    ]
    if receipt.counted:
        total = sum(receipt.deleted.values())
        lines.append(
            f"  {total} items: " + ", ".join(f"{count} {kind}" for kind, count in sorted(receipt.deleted.items()))
        )
    return lines
