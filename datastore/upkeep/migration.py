"""``python server.py migrate``: data written by an earlier release brought to this release's layout.

Layout 0 (every release before layout versions) lacks three things layout 1 added:

- name entries (search and ``orderBy: NAME`` miss the employee): written by
  ``name_backfill.index_organization``;
- a job's application counters and ``countsRevision`` (``applicationCounts`` reads zeros):
  recounted and repaired by ``counts.check_organization(fix=True)``, which fixes headcounts
  that drifted too;
- an organisation's email domains (``createEmployee`` fails): each organisation that owns
  none is given the domains of its employees' emails that no other organisation holds
  (``organizations.adopt_email_domains``); a domain held elsewhere is reported, never taken.

Layout 1 lacks one thing layout 2 added:

- audit events' expiry (``expiresAt``, the table's TTL attribute; datastore/table/retention.py): each
  event without one is given the time it happened plus its organisation's retention
  (``stamp_audit_expiries``), one conditional UpdateItem each, month bucket by month bucket
  (one Query per page of each), so DynamoDB's TTL deletes it when its retention is over. An
  event older than its retention is stamped in the past and deleted within days.

A table is brought through each layout in turn (0 to 1, then 1 to 2), stamped after each.
Organisation by organisation (AP14), each step a function of one organisation, then the
version is stamped (datastore/upkeep/layout_version.py). After each step the organisation's
progress item (``LAYOUT`` / ``MIGRATION#<version>#<org>``) records it and what it did, so an
interrupted run, run again, skips what is done and finishes the rest; each step is safe to
repeat anyway (the backfill rewrites the same entries, the repair recounts, a domain is
given only to an organisation still without one). Queries and GetItems only, never a Scan.

Steps assume that no server of the earlier release writes meanwhile: its writes would lack
what the steps add. The start-up check keeps this release's servers off until the stamp.

Whatever the layout, the table's stream is turned on if an earlier release created the table
without one (``provision.ensure_stream``): live updates read it, and a table is changed, not
its data, so the layout version does not move for it. It goes on after the last step, just
before the stamp lets this release's servers on the data: the steps' own writes are no change
anyone follows (no reader runs on unmigrated data), so they are not streamed. DynamoDB Local
also slows down on every write to a table with a stream as it holds more streamed data (a
16-organisation run took ten times as long in an engine already holding a few dozen such
tables), which a run streaming its own backfill would pay on each of its writes.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

from datastore.errors import Conflict, DatastoreError, InvalidInput
from datastore.kinds import layout
from datastore.kinds.bookkeeping import MigrationProgress
from datastore.table import retention, transact, updates
from datastore.table.pagination import every
from datastore.table.scoped import Table
from datastore.table.transact import put
from datastore.tenancy import keys
from datastore.tenancy.scope import LayoutScope, PlatformScope, TenantScope
from datastore.tenants import employees, organizations
from datastore.upkeep import counts, layout_version, name_backfill, provision
from datastore.values import items, validation
from datastore.values.ids import OrgId, id_time

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NAME_ENTRIES: Final = "name entries"
APPLICATION_COUNTS: Final = "application counts"
EMAIL_DOMAINS: Final = "email domains"
AUDIT_EXPIRIES: Final = "audit expiries"
# Audit events read per Query while stamping.
_EVENTS_PAGE: Final = 100


Progress = MigrationProgress
"""What the migration to one layout has done for one organisation (its progress item)."""


Step = Callable[[Table, Progress], Awaitable[Progress]]
"""One step for one organisation: given the platform's table and what is done, what it did."""


async def index_names(table: Table, progress: Progress) -> Progress:
    tenant = table.with_scope(TenantScope(progress.org_id))
    return replace(progress, employees_indexed=await name_backfill.index_organization(tenant))


async def repair_counts(table: Table, progress: Progress) -> Progress:
    tenant = table.with_scope(TenantScope(progress.org_id))
    report = await counts.check_organization(tenant, fix=True)
    return replace(progress, counters_repaired=len(report.drifts))


async def employee_domains(table: Table, org_id: OrgId) -> list[str]:
    """The domains of the organisation's employees' emails, most employees first (AP3 pages)."""
    tenant = table.with_scope(TenantScope(org_id))
    tally = Counter(
        [
            validation.email_domain(emp.email)
            async for emp in every(lambda request: employees.list_employees(tenant, request))
        ]
    )
    return [domain for domain, _count in sorted(tally.items(), key=lambda pair: (-pair[1], pair[0]))]


async def adopt_domains(table: Table, progress: Progress) -> Progress:
    """Give an organisation without email domains those of its employees that are free."""
    org_id = progress.org_id
    provisioning = table.with_scope(PlatformScope(provisioning=org_id))
    found = await provisioning.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
    if found is None or layout.ORGANIZATION.read(found).email_domains:
        return progress  # gone, or owns domains (created by this release, or given by an operator)
    valid, not_valid = [], []
    for domain in await employee_domains(table, org_id):
        try:
            valid.append(validation.domain(domain))
        except InvalidInput:
            not_valid.append(domain)
    chosen, over = valid[: validation.EMAIL_DOMAINS_MAX], valid[validation.EMAIL_DOMAINS_MAX :]
    adopted = await organizations.adopt_email_domains(table.with_scope(PlatformScope()), org_id, chosen)
    return replace(
        progress,
        domains_assigned=adopted.assigned,
        domains_held_elsewhere=adopted.held_elsewhere,
        domains_not_valid=tuple(not_valid),
        domains_over_limit=tuple(over),
        without_domains=not adopted.owned,
    )


class _Stamped(Conflict):
    """The event has an expiry by now, or is gone: nothing to do."""


def _already(_old: items.Item | None) -> _Stamped:
    return _Stamped("the event has an expiry, or is gone")


async def stamp_audit_expiries(table: Table, progress: Progress) -> Progress:
    """Give each of the organisation's audit events without ``expiresAt`` its expiry: when it
    happened plus the organisation's retention (its own, or the table's default).

    Every month bucket from the organisation's creation to now, a Query per page (never a
    Scan); one UpdateItem per event lacking it, on the condition that it still exists and still
    lacks it, so a run again (or an event stamped meanwhile) changes nothing. Erased events keep
    their erasure; only the one attribute is added.
    """
    org_id = progress.org_id
    tenant = table.with_scope(TenantScope(org_id))
    found = await tenant.get(layout.ORGANIZATION.key_at(org_id), consistent=True)
    organization = None if found is None else layout.ORGANIZATION.read(found)
    days = retention.days_of(organization, table.retention.default_days)
    month, last = keys.audit_bucket(id_time(org_id)), keys.audit_bucket(items.now())
    stamped = 0
    while month <= last:
        partition_key = layout.AUDIT_EVENT.partition(org_id, month)
        start = None
        while True:
            result = await tenant.query(
                partition_key, sk_prefix=layout.AUDIT_EVENT.sort_prefix, limit=_EVENTS_PAGE, start_key=start
            )
            for event in map(layout.AUDIT_EVENT.read, result.items):
                if event.expires_at is not None:
                    continue
                expires = retention.expiry(event.occurred_at, days)
                update = transact.update(
                    layout.AUDIT_EVENT.key_of(event),
                    [updates.Set(layout.EXPIRES_AT, {"N": str(int(expires.timestamp()))})],
                    condition=f"attribute_exists(PK) AND attribute_not_exists({layout.EXPIRES_AT})",
                    on_failed=_already,
                )
                try:
                    await tenant.write([update])
                except _Stamped:
                    continue
                stamped += 1
            if not result.has_more:
                break
            start = Table.start_key_of(result.items[-1])
        month = keys.next_audit_bucket(month)
    return replace(progress, events_stamped=(progress.events_stamped or 0) + stamped)


# The steps that bring data from the layout before to each layout, in order.
STEPS: Final[dict[int, tuple[tuple[str, Step], ...]]] = {
    1: ((EMAIL_DOMAINS, adopt_domains), (NAME_ENTRIES, index_names), (APPLICATION_COUNTS, repair_counts)),
    2: ((AUDIT_EXPIRIES, stamp_audit_expiries),),
}


# --- progress items -------------------------------------------------------------------------


async def read_progress(table: Table, version: int, org_id: OrgId, org_name: str) -> Progress:
    """What is done for the organisation (one GetItem), under the name it has now."""
    item = await table.with_scope(LayoutScope()).get(layout.MIGRATION_PROGRESS.key_at(version, org_id), consistent=True)
    if item is None:
        return Progress(org_id, org_name)
    return replace(layout.MIGRATION_PROGRESS.read(item, org_id=org_id), org_name=org_name)


async def write_progress(table: Table, version: int, progress: Progress) -> None:
    item = layout.MIGRATION_PROGRESS.item(progress, version=version)
    await table.with_scope(LayoutScope()).write([put(item)])


# --- the run ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """An organisation the run could not finish: re-running resumes it."""

    org_id: OrgId
    org_name: str
    step: str
    reason: str

    def describe(self) -> str:
        return f"{self.org_id} {self.org_name}: {self.step} failed: {self.reason}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def _did_layout_1(outcomes: list[Progress]) -> str:
    indexed = sum(outcome.employees_indexed for outcome in outcomes)
    repaired = sum(outcome.counters_repaired for outcome in outcomes)
    given = sum(1 for outcome in outcomes if outcome.domains_assigned)
    return (
        f"{indexed} employees indexed, {repaired} counters repaired, "
        f"{_plural(given, 'organisation')} given email domains"
    )


def _did_layout_2(outcomes: list[Progress]) -> str:
    stamped = sum(outcome.events_stamped or 0 for outcome in outcomes)
    return f"{_plural(stamped, 'audit event')} given an expiry"


# What each layout's steps did, in one phrase for the summary.
_DID: Final[dict[int, Callable[[list[Progress]], str]]] = {1: _did_layout_1, 2: _did_layout_2}


@dataclass
class LayoutRun:
    """What a run did to bring the table's data from layout ``version - 1`` to ``version``."""

    version: int
    organizations: int = 0
    # Organisations whose every step of this layout a run before this one had finished.
    done_earlier: int = 0
    outcomes: list[Progress] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)

    @property
    def needs_operator(self) -> list[Progress]:
        return [outcome for outcome in self.outcomes if outcome.problems()]

    def lines(self) -> list[str]:
        lines = [
            f"{_plural(self.organizations, 'organisation')} from layout {self.version - 1} to {self.version} "
            f"({self.done_earlier} done by an earlier run): {_DID[self.version](self.outcomes)}"
        ]
        given = [outcome for outcome in self.outcomes if outcome.domains_assigned]
        lines += [f"  {o.org_id} {o.org_name}: email domains {', '.join(o.domains_assigned)}" for o in given]
        for outcome in self.needs_operator:
            lines += [f"  {outcome.org_id} {outcome.org_name}: {problem}" for problem in outcome.problems()]
        lines += [f"  {failure.describe()}" for failure in self.failures]
        return lines


@dataclass
class Summary:
    """What a run found and did: one LayoutRun per layout it went through, in order."""

    table_name: str
    found: int
    target: int = layout_version.CURRENT
    runs: list[LayoutRun] = field(default_factory=list)
    stamped: bool = False
    # The table had no stream and the run turned it on (provision.ensure_stream).
    stream_enabled: bool = False

    def run(self, version: int) -> LayoutRun:
        """The run to ``version``; KeyError when this run did not go through it."""
        for run in self.runs:
            if run.version == version:
                return run
        raise KeyError(version)

    @property
    def failures(self) -> list[Failure]:
        return [failure for run in self.runs for failure in run.failures]

    @property
    def needs_operator(self) -> list[Progress]:
        return [outcome for run in self.runs for outcome in run.needs_operator]

    def lines(self) -> list[str]:
        stream = [f"table {self.table_name}: turned its stream on (live updates)"] if self.stream_enabled else []
        if self.found == self.target and not self.stamped:
            return [*stream, f"table {self.table_name} is at layout {self.target} already: nothing to migrate"]
        if self.found == self.target:
            return [*stream, f"table {self.table_name} holds no organisation: stamped layout {self.target}"]
        lines = [*stream, *(line for run in self.runs for line in run.lines())]
        if self.stamped:
            lines.append(f"table {self.table_name} is at layout {self.target} now")
        else:
            failures = self.failures
            at = self.runs[-1].version - 1 if self.runs else self.found
            lines.append(
                f"table {self.table_name} stays at layout {at}: {_plural(len(failures), 'organisation')} "
                "not finished; run the migration again to finish them"
            )
        return lines


@dataclass(frozen=True, slots=True)
class Organization:
    org_id: OrgId
    name: str


async def organizations_of(table: Table) -> AsyncIterator[Organization]:
    """Every organisation of the platform (AP14, page by page)."""
    platform = table.with_scope(PlatformScope())
    async for org in every(lambda request: organizations.list_organizations(platform, request)):
        yield Organization(org.org_id, org.name)


class Refused(Exception):
    """The table's data is from a later release: this one cannot migrate it."""


class _StepFailed(Exception):
    def __init__(self, step: str, error: DatastoreError) -> None:
        self.step = step
        self.error = error
        super().__init__(f"{step}: {error}")


async def migrate_organization(table: Table, version: int, progress: Progress) -> Progress:
    """Run the steps to ``version`` the organisation has not finished, recording each.

    A step that fails for this organisation only (an employee or a counter kept changing
    under it, a domain refused) raises _StepFailed; DynamoDB being unreachable raises
    Unavailable.
    """
    for name, step in STEPS[version]:
        if name in progress.steps_done:
            continue
        try:
            progress = await step(table, progress)
        except (Conflict, InvalidInput, counts.KeptChanging) as error:
            raise _StepFailed(name, error) from None
        progress = replace(progress, steps_done=progress.steps_done | {name})
        await write_progress(table, version, progress)
    return progress


async def migrate(
    table: Table,
    control: DynamoDBClient,
    *,
    on_start: Callable[[int], None] = lambda _total: None,
    on_organization: Callable[[Progress | Failure], None] = lambda _done: None,
) -> Summary:
    """Bring ``table``'s data to ``layout_version.CURRENT`` (module docstring).

    ``on_start`` hears how many organisations each layout's migration goes through (one AP14
    pass to count them) before it begins, only when there is something to migrate;
    ``on_organization`` hears of each organisation as it is finished (or fails). The summary
    tells of each layout's migration (``Summary.runs``). Raises Refused for data of a later release;
    DynamoDB being unreachable ends the run (Unavailable), with what was done recorded.
    """
    stored = await layout_version.stored_version(table)
    found = (
        stored
        if stored is not None
        else (0 if await layout_version.has_organizations(table) else layout_version.CURRENT)
    )
    summary = Summary(table.name, found)
    if found > layout_version.CURRENT:
        raise Refused(layout_version.mismatch(table.name, found))
    if found == layout_version.CURRENT:
        summary.stream_enabled = await asyncio.to_thread(provision.ensure_stream, control, table.name)
        if stored is None:  # an empty table never stamped
            await layout_version.stamp(table, found, over=None)
            summary.stamped = True
        return summary
    for version in range(found + 1, layout_version.CURRENT + 1):
        run = LayoutRun(version)
        summary.runs.append(run)
        every_step = {name for name, _step in STEPS[version]}
        on_start(len([org async for org in organizations_of(table)]))
        async for org in organizations_of(table):
            run.organizations += 1
            progress = await read_progress(table, version, org.org_id, org.name)
            run.done_earlier += progress.steps_done >= every_step
            try:
                outcome = await migrate_organization(table, version, progress)
            except _StepFailed as failed:
                failure = Failure(org.org_id, org.name, failed.step, str(failed.error))
                run.failures.append(failure)
                on_organization(failure)
                continue  # the other organisations go on; a run again resumes this one
            run.outcomes.append(outcome)
            on_organization(outcome)
        if run.failures:
            return summary
        if version == layout_version.CURRENT:  # after the steps, before the stamp (module docstring)
            summary.stream_enabled = await asyncio.to_thread(provision.ensure_stream, control, table.name)
        await layout_version.stamp(table, version, over=stored)
        stored = version
    summary.stamped = True
    return summary
