"""``migration.migrate`` on data written in the previous release's layout (tests/legacy_layout.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo
from datastore.errors import InvalidInput, Unavailable
from datastore.kinds import layout
from datastore.kinds.entities import ApplicationCounts, AuditEvent, Plan, Role
from datastore.table.retention import AuditRetention
from datastore.table.scoped import REASON_CONDITION_FAILED, Table
from datastore.tenancy import keys
from datastore.tenancy.scope import PlatformScope, TenantScope
from datastore.tenants import employees, jobs, organizations
from datastore.upkeep import layout_version, migration, provision
from datastore.values import ids
from datastore.values.ids import OrgId
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import TEST_RETRY
from tests.datastore.faults import CONNECTION_ERROR, failing_calls, injected
from tests.datastore.support import all_pages, drop_table, raw_get, write_items
from tests.legacy_layout import LegacyOrganization, create_legacy_table, layout_1_organization, typical_organization

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
HIRE = {"first_name": "New", "last_name": "Hire", "department_id": None, "role": Role.EMPLOYEE}


@pytest.fixture
def legacy(client: DynamoDBClient, dynamo: AsyncDynamo) -> Iterator[Table]:
    """A table of its own as the previous release created it (every organisation is the test's)."""
    name = f"hr-migrate-{ids.new_id().lower()}"
    create_legacy_table(client, name)
    yield Table(dynamo, name, PlatformScope(), retry=TEST_RETRY)
    drop_table(client, name)


def tenant(table: Table, org: LegacyOrganization) -> Table:
    return table.with_scope(TenantScope(org.org_id))


def by_name(table: Table, prefix: str) -> list[str]:
    return [e.email for e in all_pages(lambda request: employees.list_employees_by_name(table, prefix, request))]


def counts_of(table: Table, org: LegacyOrganization) -> dict[str, ApplicationCounts]:
    found = {}
    for job_id in org.applications:
        job = run(jobs.get_job(tenant(table, org), job_id, consistent=True))
        assert job is not None
        found[job_id] = job.application_counts
    return found


def expected_counts(org: LegacyOrganization) -> dict[str, ApplicationCounts]:
    return {job_id: ApplicationCounts(**statuses) for job_id, statuses in org.applications.items()}


def domains_of(table: Table, org: LegacyOrganization) -> tuple[str, ...]:
    found = run(organizations.get_organization(tenant(table, org)))
    assert found is not None
    return found.email_domains


def test_migrate__layout_0__names_counts_and_domains_work_afterwards(legacy: Table, client: DynamoDBClient) -> None:
    acme = typical_organization("Acme", "acme.example").write(client, legacy.name)
    people = sorted(e.email for e in acme.employees)
    # What the previous release's data answers today: nothing by name, zero counts, no hiring.
    assert by_name(tenant(legacy, acme), "") == [] and by_name(tenant(legacy, acme), "ng") == []
    assert all(counts.total == 0 for counts in counts_of(legacy, acme).values())
    with pytest.raises(InvalidInput):
        run(employees.create_employee(tenant(legacy, acme), email="new@acme.example", **HIRE))  # type: ignore[arg-type]

    with calls.listening() as log:
        summary = run(migration.migrate(legacy, client))

    assert "Scan" not in log.operations()
    assert (summary.found, summary.stamped) == (0, True)
    assert [(run.version, run.organizations, run.done_earlier) for run in summary.runs] == [(1, 1, 0), (2, 1, 0)]
    [outcome] = summary.run(1).outcomes
    assert outcome.employees_indexed == len(acme.employees)
    assert outcome.counters_repaired == sum(1 for statuses in acme.applications.values() for _ in statuses)
    assert outcome.domains_assigned == ("acme.example",) and outcome.problems() == []
    assert run(layout_version.stored_version(legacy)) == layout_version.CURRENT
    assert sorted(by_name(tenant(legacy, acme), "")) == people
    assert by_name(tenant(legacy, acme), "ng") == ["p2@acme.example", "p3@acme.example"]  # Ng, then Ng Li
    assert by_name(tenant(legacy, acme), "zoe") == ["p0@acme.example"]  # Zoë, folded
    assert counts_of(legacy, acme) == expected_counts(acme)
    assert domains_of(legacy, acme) == ("acme.example",)
    hired = run(employees.create_employee(tenant(legacy, acme), email="new@acme.example", **HIRE))  # type: ignore[arg-type]
    assert by_name(tenant(legacy, acme), "hire") == [hired.email]
    assert summary.lines()[-1] == f"table {legacy.name} is at layout {layout_version.CURRENT} now"


def test_migrate__run_again__reads_the_version_and_writes_nothing(legacy: Table, client: DynamoDBClient) -> None:
    typical_organization("Acme", "acme.example").write(client, legacy.name)
    run(migration.migrate(legacy, client))

    with calls.listening() as log:
        again = run(migration.migrate(legacy, client))

    # The version item, and the table's description (its stream is on already): no write.
    assert log.operations() == ["GetItem", "DescribeTable"]
    assert (again.found, again.runs, again.stamped) == (layout_version.CURRENT, [], False)
    assert again.lines() == [f"table {legacy.name} is at layout {layout_version.CURRENT} already: nothing to migrate"]


def test_migrate__interrupted_after_one_organisation__run_again_finishes_the_rest(
    legacy: Table, client: DynamoDBClient
) -> None:
    orgs = [
        typical_organization(name, f"{name.lower()}.example", people=3).write(client, legacy.name)
        for name in ("Alpha", "Beta", "Gamma")
    ]
    finished: list[str] = []

    def interrupt(outcome: migration.Progress | migration.Failure) -> None:
        finished.append(outcome.org_id)
        raise KeyboardInterrupt  # Ctrl-C as the first organisation is done

    with pytest.raises(KeyboardInterrupt):
        run(migration.migrate(legacy, client, on_organization=interrupt))
    assert finished == [orgs[0].org_id]  # AP14 order: by name
    assert run(layout_version.stored_version(legacy)) is None  # not stamped: layout 0 still
    assert by_name(tenant(legacy, orgs[1]), "") == []

    with calls.listening() as log:
        summary = run(migration.migrate(legacy, client))

    assert (summary.run(1).organizations, summary.run(1).done_earlier, summary.stamped) == (3, 1, True)
    # The finished organisation's progress item was read, and nothing of it written again.
    written = [pk for call in log.snapshot() if call.operation in WRITES for pk in call.partition_keys()]
    assert not any(keys.in_tenant(pk, orgs[0].org_id) for pk in written)
    for org in orgs:
        assert sorted(by_name(tenant(legacy, org), "")) == sorted(e.email for e in org.employees)
        assert counts_of(legacy, org) == expected_counts(org)
    # The summary tells of the earlier run's work too: it is in the progress items.
    given = [o.domains_assigned for o in summary.run(1).outcomes]
    assert given == [("alpha.example",), ("beta.example",), ("gamma.example",)]


def test_migrate__interrupted_between_steps__finished_steps_not_run_again(
    legacy: Table, client: DynamoDBClient
) -> None:
    acme = typical_organization("Acme", "acme.example").write(client, legacy.name)
    # Where a run stopped after the first step of the organisation: domains given and recorded.
    done = run(migration.adopt_domains(legacy, migration.Progress(acme.org_id, "Acme")))
    stopped = replace(done, steps_done=frozenset({migration.EMAIL_DOMAINS}))
    run(migration.write_progress(legacy, 1, stopped))

    with calls.listening() as log:
        summary = run(migration.migrate(legacy, client))

    touched = {pk for call in log.snapshot() if call.operation in WRITES for pk in call.partition_keys()}
    assert not any(keys.is_domain_pk(pk) for pk in touched)  # the domain step did not run again
    assert summary.run(1).done_earlier == 0 and summary.stamped
    assert summary.run(1).outcomes[0].domains_assigned == ("acme.example",)
    assert summary.run(1).outcomes[0].steps_done == {name for name, _step in migration.STEPS[1]}
    assert sorted(by_name(tenant(legacy, acme), "")) == sorted(e.email for e in acme.employees)
    assert counts_of(legacy, acme) == expected_counts(acme)


def test_migrate__employees_in_several_free_domains__all_given(legacy: Table, client: DynamoDBClient) -> None:
    org = LegacyOrganization("Merged")
    org.employee("a@one.example", "A", "One", role="admin")
    org.employee("b@two.example", "B", "Two")
    org.employee("c@two.example", "C", "Two")
    org.write(client, legacy.name)

    summary = run(migration.migrate(legacy, client))

    assert summary.run(1).outcomes[0].domains_assigned == ("one.example", "two.example")
    assert domains_of(legacy, org) == ("one.example", "two.example")
    for domain in ("one.example", "two.example"):
        marker = raw_get(client, legacy.name, layout.EMAIL_DOMAIN.key_at(domain))
        assert marker is not None and marker["orgId"] == {"S": org.org_id}
    assert summary.needs_operator == []


def test_migrate__domain_held_by_another_organisation__reported_never_taken(
    legacy: Table, client: DynamoDBClient
) -> None:
    holder, _admin = run(
        organizations.create_organization(  # a newer organisation owns shared.example
            legacy,
            name="Holder",
            plan=Plan.PRO,
            email_domains=["shared.example"],
            admin_email="boss@shared.example",
            admin_first_name="B",
            admin_last_name="Oss",
        )
    )
    mixed = LegacyOrganization("Mixed")
    mixed.employee("a@shared.example", "A", "Shared", role="admin")
    mixed.employee("b@own.example", "B", "Own")
    mixed.write(client, legacy.name)
    only_shared = LegacyOrganization("Only Shared")
    only_shared.employee("c@shared.example", "C", "Shared", role="admin")
    only_shared.write(client, legacy.name)

    summary = run(migration.migrate(legacy, client))

    by_org = {outcome.org_id: outcome for outcome in summary.run(1).outcomes}
    assert by_org[mixed.org_id].domains_assigned == ("own.example",)
    assert by_org[mixed.org_id].domains_held_elsewhere == ("shared.example",)
    assert not by_org[mixed.org_id].without_domains
    assert by_org[only_shared.org_id].domains_held_elsewhere == ("shared.example",)
    assert by_org[only_shared.org_id].without_domains
    assert by_org[holder.org_id].domains_assigned == () and by_org[holder.org_id].problems() == []
    marker = raw_get(client, legacy.name, layout.EMAIL_DOMAIN.key_at("shared.example"))
    assert marker is not None and marker["orgId"] == {"S": holder.org_id}
    assert domains_of(legacy, only_shared) == ()
    assert summary.stamped  # the layout is current: an organisation without domains is an operator's task
    assert [o.org_id for o in summary.needs_operator] == [mixed.org_id, only_shared.org_id]
    lines = summary.lines()
    assert f"  {only_shared.org_id} Only Shared: held by another organisation: shared.example" in lines
    assert any(line.startswith(f"  {only_shared.org_id} Only Shared: it owns no email domain now") for line in lines)


def test_migrate__two_old_organisations_share_a_domain__the_first_by_name_gets_it(
    legacy: Table, client: DynamoDBClient
) -> None:
    orgs = []
    for name, person in (("Beta", "b"), ("Alpha", "a")):
        org = LegacyOrganization(name)
        org.employee(f"{person}@common.example", person.upper(), "Person", role="admin")
        orgs.append(org.write(client, legacy.name))
    beta, alpha = orgs

    summary = run(migration.migrate(legacy, client))

    assert domains_of(legacy, alpha) == ("common.example",)
    assert domains_of(legacy, beta) == ()
    assert [o.org_id for o in summary.needs_operator] == [beta.org_id]
    with pytest.raises(InvalidInput):
        run(employees.create_employee(tenant(legacy, beta), email="x@common.example", **HIRE))  # type: ignore[arg-type]


def test_migrate__organisation_that_owns_domains__left_as_it_is(legacy: Table, client: DynamoDBClient) -> None:
    org = LegacyOrganization("Given")
    org.employee("a@given.example", "A", "Given", role="admin")
    org.employee("b@other.example", "B", "Other")
    org.write(client, legacy.name)
    # An operator gave it a domain with the previous release's successor before migrating.
    run(organizations.add_email_domain(legacy, org.org_id, "given.example"))

    summary = run(migration.migrate(legacy, client))

    assert domains_of(legacy, org) == ("given.example",)
    assert summary.run(1).outcomes[0].domains_assigned == () and summary.run(1).outcomes[0].problems() == []


def test_migrate__empty_table_without_version__stamped(legacy: Table, client: DynamoDBClient) -> None:
    summary = run(migration.migrate(legacy, client))
    assert summary.stamped and summary.runs == []
    assert summary.lines() == [
        f"table {legacy.name}: turned its stream on (live updates)",
        f"table {legacy.name} holds no organisation: stamped layout {layout_version.CURRENT}",
    ]
    assert run(layout_version.stored_version(legacy)) == layout_version.CURRENT


def test_migrate__layout_of_a_later_release__refused_and_nothing_written(legacy: Table, client: DynamoDBClient) -> None:
    run(layout_version.stamp(legacy, layout_version.CURRENT + 1, over=None))
    typical_organization("Later", "later.example").write(client, legacy.name)

    with calls.listening() as log, pytest.raises(migration.Refused, match="written by a later release"):
        run(migration.migrate(legacy, client))
    assert not WRITES & set(log.operations())


def test_migrate__outage_mid_run__ends_it_and_a_run_again_finishes(
    legacy: Table, client: DynamoDBClient, dynamo: AsyncDynamo
) -> None:
    orgs = [
        typical_organization(name, f"{name.lower()}.example", people=2).write(client, legacy.name)
        for name in ("Alpha", "Beta")
    ]
    with failing_calls(dynamo) as faults:

        def outage(_done: migration.Progress | migration.Failure) -> None:
            faults.fault = CONNECTION_ERROR  # DynamoDB goes away once the first organisation is done

        with pytest.raises(Unavailable):
            run(migration.migrate(legacy, client, on_organization=outage))
    assert run(layout_version.stored_version(legacy)) is None
    assert by_name(tenant(legacy, orgs[1]), "") == []

    summary = run(migration.migrate(legacy, client))

    assert (summary.run(1).done_earlier, summary.stamped) == (1, True)
    assert all(counts_of(legacy, org) == expected_counts(org) for org in orgs)


def test_migrate__step_fails_for_one_organisation__others_finish_and_nothing_stamped(
    legacy: Table, client: DynamoDBClient, dynamo: AsyncDynamo
) -> None:
    first = typical_organization("Alpha", "alpha.example", people=2).write(client, legacy.name)
    second = typical_organization("Beta", "beta.example", people=2).write(client, legacy.name)
    run(organizations.add_email_domain(legacy, first.org_id, "alpha.example"))  # its first write is then a name entry's

    with injected(dynamo) as faults:
        faults.cancel(REASON_CONDITION_FAILED, times=1)  # that write refused, as a conflicting write would be
        summary = run(migration.migrate(legacy, client))

    [failure] = summary.failures
    assert (failure.org_id, failure.step) == (first.org_id, migration.NAME_ENTRIES)
    assert [outcome.org_id for outcome in summary.run(1).outcomes] == [second.org_id]
    assert not summary.stamped and run(layout_version.stored_version(legacy)) is None
    assert summary.lines()[-1] == (
        f"table {legacy.name} stays at layout 0: 1 organisation not finished; run the migration again to finish them"
    )
    assert f"  {failure.describe()}" in summary.lines()

    again = run(migration.migrate(legacy, client))

    assert (again.run(1).done_earlier, again.failures, again.stamped) == (1, [], True)
    assert sorted(by_name(tenant(legacy, first), "")) == sorted(e.email for e in first.employees)


def test_progress__problems__one_phrase_each() -> None:
    progress = migration.Progress(
        ids.new_id(),
        "Acme",
        steps_done=frozenset({migration.NAME_ENTRIES}),
        employees_indexed=3,
        domains_held_elsewhere=("x.example",),
        without_domains=True,
    )
    assert progress.problems() == [
        "held by another organisation: x.example",
        "it owns no email domain now, so createEmployee fails there: run addEmailDomain",
    ]


def test_migrate__table_created_the_old_way__stream_turned_on_and_said_so(
    legacy: Table, client: DynamoDBClient
) -> None:
    typical_organization("Streamless", "streamless.example").write(client, legacy.name)
    assert provision.stream_arn(client, legacy.name) is None

    summary = run(migration.migrate(legacy, client))

    assert summary.stream_enabled and provision.stream_arn(client, legacy.name) is not None
    assert summary.lines()[0] == f"table {legacy.name}: turned its stream on (live updates)"
    assert run(migration.migrate(legacy, client)).stream_enabled is False  # a second run finds it on


# --- layout 1 to 2: audit events' expiry ------------------------------------------------------


def _trail(table: Table, org_id: str) -> list[AuditEvent]:
    return all_pages(lambda request: audit.list_audit_events(table.with_scope(TenantScope(OrgId(org_id))), request))


def test_migrate__layout_1__audit_events_given_their_organisations_expiry_and_reads_unchanged(
    legacy: Table, client: DynamoDBClient
) -> None:
    first, second = "01HZ0000000000000000000001", "01HZ00000000000000000000B1"
    items_1 = layout_1_organization(first, "Acme")
    items_2 = layout_1_organization(second, "Beta", retention_days=1000)
    for written in (items_1, items_2):  # one organisation a request, as any writer
        write_items(client, legacy.name, written)
    run(layout_version.stamp(legacy, 1, over=None))
    table = Table(legacy.dynamo, legacy.name, PlatformScope(), retry=TEST_RETRY, retention=AuditRetention(400))
    before = {org_id: _trail(table, org_id) for org_id in (first, second)}
    assert [len(trail) for trail in before.values()] == [2, 2]
    assert all(event.expires_at is None for trail in before.values() for event in trail)

    with calls.listening() as log:
        summary = run(migration.migrate(table, client))

    assert "Scan" not in log.operations()
    assert summary.found == 1 and summary.stamped and run(layout_version.stored_version(legacy)) == 2
    [layout_run] = summary.runs
    assert (layout_run.version, layout_run.organizations, layout_run.done_earlier) == (2, 2, 0)
    assert [outcome.events_stamped for outcome in layout_run.outcomes] == [2, 2]
    assert summary.lines() == [
        f"table {legacy.name}: turned its stream on (live updates)",
        "2 organisations from layout 1 to 2 (0 done by an earlier run): 4 audit events given an expiry",
        f"table {legacy.name} is at layout 2 now",
    ]
    for org_id, days in ((first, 400), (second, 1000)):
        after = _trail(table, org_id)
        # Reads are what they were, each event now with when it happened plus its organisation's retention.
        assert [replace(event, expires_at=None) for event in after] == before[org_id]
        for event in after:
            expected = int((event.occurred_at + timedelta(days=days)).timestamp())
            stored = raw_get(client, legacy.name, layout.AUDIT_EVENT.key_of(event))
            assert stored is not None and stored[layout.EXPIRES_AT] == {"N": str(expected)}

    with calls.listening() as log:
        again = run(migration.migrate(table, client))
    assert again.lines() == [f"table {legacy.name} is at layout 2 already: nothing to migrate"]
    assert not WRITES & set(log.operations())


def test_migrate__layout_1_interrupted__run_again_stamps_the_rest_and_rewrites_nothing(
    legacy: Table, client: DynamoDBClient
) -> None:
    orgs = ["01HZ00000000000000000000C1", "01HZ00000000000000000000C2"]
    for n, org in enumerate(orgs):
        write_items(client, legacy.name, layout_1_organization(org, f"Org{n}"))
    run(layout_version.stamp(legacy, 1, over=None))

    def interrupt(_done: migration.Progress | migration.Failure) -> None:
        raise KeyboardInterrupt  # Ctrl-C as the first organisation is done

    with pytest.raises(KeyboardInterrupt):
        run(migration.migrate(legacy, client, on_organization=interrupt))
    assert run(layout_version.stored_version(legacy)) == 1
    assert [e.expires_at is None for e in _trail(legacy, orgs[1])] == [True, True]

    with calls.listening() as log:
        summary = run(migration.migrate(legacy, client))

    written = [pk for call in log.snapshot() if call.operation in WRITES for pk in call.partition_keys()]
    assert not any(keys.in_tenant(pk, orgs[0]) for pk in written)
    assert (summary.run(2).organizations, summary.run(2).done_earlier, summary.stamped) == (2, 1, True)
    assert all(e.expires_at is not None for org in orgs for e in _trail(legacy, org))


def test_migrate__layout_0__brought_through_1_and_2_and_the_summary_tells_of_each(
    legacy: Table, client: DynamoDBClient
) -> None:
    typical_organization("Acme", "acme.example").write(client, legacy.name)

    summary = run(migration.migrate(legacy, client))

    lines = summary.lines()
    assert lines[1].startswith("1 organisation from layout 0 to 1 (0 done by an earlier run): ")
    # Layout 1's step wrote its own audit event (domains given) with its expiry: nothing left to stamp.
    assert lines[-2] == "1 organisation from layout 1 to 2 (0 done by an earlier run): 0 audit events given an expiry"
    assert lines[-1] == f"table {legacy.name} is at layout 2 now"
