"""Restoring one organisation: exact round trips, other tenants untouched, locked, resumable."""

from __future__ import annotations

import asyncio
import gzip
import json
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from datastore.aws.client import AsyncDynamo
from datastore.kinds import layout
from datastore.kinds.entities import ApiKeyStatus, OrganizationStatus, Role
from datastore.lifecycle import erasure, offboarding, restore
from datastore.lifecycle.restore import FileSource, Refused, Restore, TableSource
from datastore.signin import api_keys, identity_providers, sessions
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import ApiKeyScope, LifecycleScope, SignInScope, TenantScope
from datastore.tenants import departments, employees, organizations
from datastore.upkeep import counts, layout_version
from datastore.values.ids import OrgId
from datastore.webhooks import endpoints as webhook_endpoints
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.datastore.lifecycle.complete import Complete, complete
from tests.datastore.lifecycle.support import (
    RESTORE_EVENT,
    empty_table,
    export_file,
    exported,
    fingerprint,
    item_lines,
    snapshot,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture
def whole(make_tenant: TenantFactory) -> Complete:
    return complete(make_tenant())


def restoring(table: Table, org_id: str, source: restore.Source, **options: object) -> Restore:
    live = table.with_scope(LifecycleScope(OrgId(org_id), "restore", "operator"))
    return Restore(live, OrgId(org_id), source, drain_seconds=0, **options)  # type: ignore[arg-type]


def status_of(client: DynamoDBClient, table: Table, org_id: str) -> OrganizationStatus:
    item = client.get_item(TableName=table.name, Key=layout.ORGANIZATION.key_at(org_id).wire())["Item"]
    return layout.ORGANIZATION.read(item).status


def test_round_trip__export_restore_into_an_empty_table_export__the_same_lines(
    whole: Complete, client: DynamoDBClient, tmp_path: Path, dynamo: AsyncDynamo
) -> None:
    org_id = whole.tenant.org_id
    first = exported(whole.tenant.table, org_id)
    target = empty_table(client, dynamo)

    report = run(
        restoring(target, org_id, FileSource(export_file(whole.tenant.table, org_id, tmp_path / "a.gz"))).run()
    )

    assert item_lines(exported(target, org_id)) == item_lines(first)
    assert report.passes == 1 and report.counters_repaired == 0
    assert status_of(client, target, org_id) is OrganizationStatus.ACTIVE
    # A key restored from a file has no hash (it never left the table): it cannot sign in.
    [key] = run(api_keys.list_api_keys(target.with_scope(TenantScope(OrgId(org_id))), _first(10))).items
    assert key.secret_hash is None
    assert run(api_keys.find_grant(target.with_scope(ApiKeyScope()), whole.secret)) is None
    # A webhook endpoint restored from a file has no secret: nothing is sent until it is rotated.
    [hook] = run(webhook_endpoints.list_endpoints(target.with_scope(TenantScope(OrgId(org_id))), consistent=True))
    assert hook.needs_rotation and hook.secret is None


def test_round_trip__audit_retention_and_every_events_expiry__exported_and_restored_as_they_were(
    whole: Complete, client: DynamoDBClient, tmp_path: Path, dynamo: AsyncDynamo
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    run(organizations.set_audit_retention(table, 500))
    run(departments.create_department(table, name="Kept 500 days"))
    first = exported(table, org_id)
    records = [json.loads(line) for line in item_lines(first)]
    events = [r["item"] for r in records if r["kind"] == layout.AUDIT_EVENT.tag]
    [org] = [r["item"] for r in records if r["kind"] == layout.ORGANIZATION.tag]
    assert events and all(layout.EXPIRES_AT in event for event in events)
    assert org[layout.AUDIT_RETENTION_DAYS] == {"N": "500"}
    target = empty_table(client, dynamo)

    run(restoring(target, org_id, FileSource(export_file(table, org_id, tmp_path / "a.gz"))).run())

    assert item_lines(exported(target, org_id)) == item_lines(first)
    restored = run(organizations.get_organization(target.with_scope(TenantScope(OrgId(org_id)))))
    assert restored is not None and restored.audit_retention_days == 500


def test_restore__over_a_changed_organisation__back_to_the_export__others_untouched(
    whole: Complete, make_tenant: TenantFactory, tmp_path: Path, client: DynamoDBClient
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    other = complete(make_tenant("Other"))
    others_before = fingerprint(table, other.tenant.org_id)
    first = exported(table, org_id)
    source = export_file(table, org_id, tmp_path / "a.gz")
    # An admin breaks things after the export.
    newcomer = whole.tenant.employee(run(departments.create_department(table, name="Skunkworks")))
    run(
        employees.update_employee(
            table, whole.employee.emp_id, expected_version=1, last_name="Changed", first_name="Zed"
        )
    )
    run(employees.move_employee(table, newcomer.emp_id, whole.department.dept_id))

    report = run(restoring(table, org_id, FileSource(source)).run())

    assert item_lines(exported(table, org_id)) == item_lines(first)
    assert fingerprint(table, other.tenant.org_id) == others_before
    assert report.deleted[layout.DEPARTMENT.tag] == 1 and report.deleted[layout.IDENTITY.tag] == 1
    assert status_of(client, table, org_id) is OrganizationStatus.ACTIVE
    assert run(counts.check_organization(whole.tenant.table)).drifts == []
    # The newcomer's email is free again.
    assert client.get_item(TableName=table.name, Key=layout.IDENTITY.key_at(newcomer.email).wire()).get("Item") is None


def test_restore__from_a_table__keys_as_they_were__a_revoked_one_stays_revoked(
    whole: Complete, client: DynamoDBClient, dynamo: AsyncDynamo
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    before = snapshot(client, dynamo, table, org_id)
    later, later_secret = run(api_keys.create_api_key(table, name="made after", role=Role.ADMIN))
    run(api_keys.revoke_api_key(table, whole.api_key.key_id))

    report = run(restoring(table, org_id, TableSource(before, OrgId(org_id))).run())

    lookup = table.with_scope(ApiKeyScope())
    assert run(api_keys.find_grant(lookup, later_secret)) is None  # made after the point restored: gone
    grant = run(api_keys.find_grant(lookup, whole.secret))
    assert grant is not None and grant.status is ApiKeyStatus.REVOKED
    assert report.kept_revoked == [whole.api_key.key_id]
    assert later.key_id not in {k.key_id for k in run(api_keys.list_api_keys(table, _first(10))).items}


def test_restore__from_a_snapshot_table__exact_including_secrets(
    whole: Complete, client: DynamoDBClient, dynamo: AsyncDynamo
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    before = snapshot(client, dynamo, table, org_id)
    run(departments.create_department(table, name="Later"))

    run(restoring(table, org_id, TableSource(before, OrgId(org_id))).run())

    # Exactly the snapshot's items, and the restore's own audit event.
    restored = fingerprint(table, org_id)
    assert [line for line in restored if RESTORE_EVENT not in line] == fingerprint(before, org_id)
    assert len(restored) == len(fingerprint(before, org_id)) + 1


def test_restore__twice__the_second_writes_nothing(whole: Complete, tmp_path: Path) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    run(restoring(table, org_id, source).run())

    again = run(restoring(table, org_id, source).run())

    assert sum(again.written.values()) == 0 and sum(again.deleted.values()) == 0


def test_restore__interrupted__stays_locked__then_resumed_to_the_end(
    whole: Complete, tmp_path: Path, client: DynamoDBClient
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    first = exported(table, org_id)
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    run(departments.create_department(table, name="Later"))

    def crash(report: restore.Report) -> None:
        if report.deleted or sum(report.unchanged.values()) > 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(restoring(table, org_id, source, on_partition=crash).run())
    assert status_of(client, table, org_id) is OrganizationStatus.RESTORING

    run(restoring(table, org_id, source).run())

    assert item_lines(exported(table, org_id)) == item_lines(first)
    assert status_of(client, table, org_id) is OrganizationStatus.ACTIVE


def test_restore__a_write_landing_during_the_pass__replaced_again(whole: Complete, tmp_path: Path) -> None:
    """A straggler: a write admitted before the lock that lands while the restore works."""
    org_id, table = whole.tenant.org_id, whole.tenant.table
    first = exported(table, org_id)
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    landed: list[str] = []

    def straggler(report: restore.Report) -> None:
        if not landed and report.passes == 1 and sum(report.unchanged.values()) > 10:
            landed.append(run(departments.create_department(table, name="Straggler")).dept_id)

    report = run(restoring(table, org_id, source, on_partition=straggler).run())

    assert landed and report.passes == 2
    assert item_lines(exported(table, org_id)) == item_lines(first)


def test_restore__writes_that_keep_landing__refused_and_unlocked(
    whole: Complete, tmp_path: Path, client: DynamoDBClient
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    live = table.with_scope(LifecycleScope(OrgId(org_id), "restore"))

    async def busy(_seconds: float) -> None:
        await departments.create_department(table, name="Busy")

    with pytest.raises(Refused, match="kept being written"):
        run(Restore(live, OrgId(org_id), source, drain_seconds=1, sleep=busy).run())
    assert status_of(client, table, org_id) is OrganizationStatus.ACTIVE


def test_restore__a_source_with_a_drifted_headcount__repaired_at_the_end(
    whole: Complete, tmp_path: Path, client: DynamoDBClient
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    client.update_item(
        TableName=table.name,
        Key=layout.DEPARTMENT.key_at(org_id, whole.department.dept_id).wire(),
        UpdateExpression="SET headcount = :n",
        ExpressionAttributeValues={":n": {"N": "9"}},
    )
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))

    report = run(restoring(table, org_id, source).run())

    assert report.counters_repaired == 1
    assert run(counts.check_organization(whole.tenant.table)).drifts == []


def test_restore__an_email_another_organisation_holds_now__refused_before_writing(
    whole: Complete, make_tenant: TenantFactory, tmp_path: Path, client: DynamoDBClient
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    other = make_tenant("Other")
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    run(departments.create_department(table, name="Later"))
    # The employee's email now names another organisation (as if it had been handed over).
    client.put_item(
        TableName=table.name,
        Item={**layout.IDENTITY.key_at(whole.employee.email).wire(), "entity": {"S": "Identity"},
              "email": {"S": whole.employee.email}, "orgId": {"S": other.org_id}, "empId": {"S": other.admin.emp_id}},
    )  # fmt: skip
    before = fingerprint(table, org_id)

    with pytest.raises(Refused, match=f"EMAIL#{whole.employee.email}"):
        run(restoring(table, org_id, source).run())

    assert fingerprint(table, org_id) == before
    assert status_of(client, table, org_id) is OrganizationStatus.ACTIVE


def test_restore__a_file_of_another_organisation__refused(whole: Complete, tenant: Tenant, tmp_path: Path) -> None:
    source = FileSource(export_file(tenant.table, tenant.org_id, tmp_path / "other.gz"))
    with pytest.raises(Refused, match="is an export of organisation"):
        run(restoring(whole.tenant.table, whole.tenant.org_id, source).run())


def test_restore__a_truncated_file__refused(whole: Complete, tmp_path: Path) -> None:
    path = export_file(whole.tenant.table, whole.tenant.org_id, tmp_path / "a.gz")
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    path.write_bytes(gzip.compress(b"".join(lines[:-5])))

    with pytest.raises(Refused, match="incomplete"):
        run(restoring(whole.tenant.table, whole.tenant.org_id, FileSource(path)).run())


def test_restore__a_file_of_another_layout__refused(whole: Complete, tmp_path: Path) -> None:
    path = export_file(whole.tenant.table, whole.tenant.org_id, tmp_path / "a.gz")
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    lines[0] = lines[0].replace(f'"layout":{layout_version.CURRENT}'.encode(), b'"layout":0')
    path.write_bytes(gzip.compress(b"".join(lines)))

    with pytest.raises(Refused, match="layout 0"):
        run(restoring(whole.tenant.table, whole.tenant.org_id, FileSource(path)).run())


def test_restore__the_record__kept_outside_the_organisation(
    whole: Complete, tmp_path: Path, client: DynamoDBClient
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    report = run(restoring(table, org_id, FileSource(export_file(table, org_id, tmp_path / "a.gz"))).run())

    [item] = client.query(
        TableName=table.name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": keys.lifecycle_pk(org_id)}},
    )["Items"]
    record = layout.RESTORE_RECORD.read(item)
    assert (record.source, record.actor_id, record.passes) == ("file a.gz", "operator", 1)
    assert record.unchanged == dict(report.unchanged)
    assert run(organizations.get_organization(whole.tenant.table)) is not None


def _first(count: int) -> PageRequest:
    return PageRequest(first=count)


def test_restore__a_person_erased_since__erased_again(whole: Complete, tmp_path: Path) -> None:
    """A source older than an erasure does not bring the person back (nor a source where they are active)."""
    org_id, table = whole.tenant.org_id, whole.tenant.table
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    run(employees.terminate_employee(table, whole.employee.emp_id))
    run(erasure.erase_person(table, whole.employee.emp_id))
    run(erasure.erase_person(table, whole.leaver.emp_id))

    report = run(restoring(table, org_id, source).run())

    assert sorted(report.erased_again) == sorted([whole.employee.emp_id, whole.leaver.emp_id])
    text = b"".join(exported(table, org_id)).decode().lower()
    assert whole.employee.email not in text and whole.leaver.email not in text
    assert "leaverton" not in text
    assert run(counts.check_organization(whole.tenant.table)).drifts == []


def test_restore__a_person_erased_while_it_runs__stays_erased(whole: Complete, tmp_path: Path) -> None:
    """An erasure landing mid-restore, after the person's partition was written from the file:
    its audit event makes the restore pass again, and that pass holds to its record."""
    org_id, table = whole.tenant.org_id, whole.tenant.table
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    erased: list[str] = []

    def erase_once(report: restore.Report) -> None:
        if not erased and report.passes == 1:
            run(employees.terminate_employee(table, whole.employee.emp_id))
            run(erasure.erase_person(table, whole.employee.emp_id))
            erased.append(whole.employee.emp_id)

    report = run(restoring(table, org_id, source, on_partition=erase_once).run())

    assert erased and report.passes == 2
    found = run(employees.get_employee(table, whole.employee.emp_id, consistent=True))
    assert found is not None and found.erased_at is not None and found.email == ""
    assert whole.employee.email not in b"".join(exported(table, org_id)).decode().lower()


def test_restore__an_organisation_being_closed__refused(whole: Complete, tmp_path: Path) -> None:
    """Only an ACTIVE or SUSPENDED organisation is restored (or a RESTORING one, resumed)."""
    org_id, table = whole.tenant.org_id, whole.tenant.table
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    run(
        offboarding.close(
            table.with_scope(LifecycleScope(OrgId(org_id), "offboard")), OrgId(org_id), grace=timedelta(1)
        )
    )

    with pytest.raises(Refused, match="CLOSING"):
        run(restoring(table, org_id, source).run())


def _provider(table: Table, org_id: str) -> tuple[str, tuple[str, ...]]:
    found = run(identity_providers.get_identity_provider(table, OrgId(org_id), consistent=True))
    assert found is not None
    return found.issuer, found.client_ids


def test_restore__a_client_id_another_organisation_holds_now__refused_naming_the_client(
    whole: Complete, make_tenant: TenantFactory, tmp_path: Path, client: DynamoDBClient
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    other = make_tenant("Other")
    issuer, _clients = _provider(table, org_id)
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    # The organisation gives its "web" client up and another registers it.
    run(identity_providers.remove_identity_provider(table, OrgId(org_id)))
    run(
        identity_providers.set_identity_provider(
            other.table,
            other.org_id,
            issuer_url=issuer,
            client_id_list=("web",),
            authorization_endpoint=f"{issuer}/authorize",
            token_endpoint=f"{issuer}/token",
        )
    )
    before = fingerprint(table, org_id)

    with pytest.raises(Refused, match=f"ISSUER#{issuer} / CLIENT#web"):
        run(restoring(table, org_id, source).run())

    assert fingerprint(table, org_id) == before
    assert run(identity_providers.find_client(table.with_scope(SignInScope()), issuer, "web")) is not None
    assert status_of(client, table, org_id) is OrganizationStatus.ACTIVE


def test_restore__clients_and_sessions_since__clients_put_back__sessions_left_as_they_are(
    whole: Complete, tmp_path: Path
) -> None:
    org_id, table = whole.tenant.org_id, whole.tenant.table
    issuer, clients = _provider(table, org_id)
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    run(
        identity_providers.set_identity_provider(
            table,
            OrgId(org_id),
            issuer_url=issuer,
            client_id_list=(*clients, "added-later"),
            authorization_endpoint=f"{issuer}/authorize",
            token_endpoint=f"{issuer}/token",
        )
    )
    started, _token = run(
        sessions.start_session(table, whole.employee.emp_id, sessions.Lifetimes(timedelta(hours=1), timedelta(days=1)))
    )
    session = run(sessions.get_session(table, whole.employee.emp_id, started.session_id))
    assert session is not None

    run(restoring(table, org_id, source).run())

    sign_in = table.with_scope(SignInScope())
    assert _provider(table, org_id) == (issuer, clients)
    assert run(identity_providers.find_client(sign_in, issuer, "added-later")) is None
    assert all(run(identity_providers.find_client(sign_in, issuer, client)) is not None for client in clients)
    # Who is signed in is not the backup's to say.
    assert run(sessions.get_session(table, whole.employee.emp_id, session.session_id)) == session


def test_restore__its_drain__waits_on_the_event_loop_without_blocking_it(whole: Complete, tmp_path: Path) -> None:
    """The drain (a second here) is an ``asyncio.sleep``: the loop's other work goes on meanwhile."""
    org_id, table = whole.tenant.org_id, whole.tenant.table
    source = FileSource(export_file(table, org_id, tmp_path / "a.gz"))
    live = table.with_scope(LifecycleScope(OrgId(org_id), "restore", "operator"))
    ticks_by_first_partition: list[int] = []

    async def beside_a_ticker() -> None:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.create_task(tick())

        def first_partition(_report: restore.Report) -> None:
            if not ticks_by_first_partition:
                ticks_by_first_partition.append(ticks)

        try:
            await Restore(live, OrgId(org_id), source, drain_seconds=1, on_partition=first_partition).run()
        finally:
            ticker.cancel()

    run(beside_a_ticker())

    # About 20 ticks of 50 ms in the drain's second; none if it blocked the loop.
    assert ticks_by_first_partition and ticks_by_first_partition[0] >= 10
