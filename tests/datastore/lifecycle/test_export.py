"""Exporting an organisation: every exported kind, no secret, resumable, audited, Queries only."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.aws import calls
from datastore.errors import Conflict, NotFound
from datastore.kinds import layout
from datastore.kinds.model import ENTITY
from datastore.lifecycle import export, kinds
from datastore.lifecycle.export import Export, Resume
from datastore.lifecycle.kinds import Export as Exported
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import LifecycleScope
from datastore.values import ids
from datastore.values.ids import OrgId
from datastore.webhooks import endpoints as webhook_endpoints
from datastore.writes import audit
from tests.blocking import run, run_all
from tests.conftest import Tenant, TenantFactory
from tests.datastore.lifecycle.complete import Complete, complete


@pytest.fixture
def whole(make_tenant: TenantFactory) -> Complete:
    return complete(make_tenant())


def reader(tenant: Tenant) -> Table:
    return tenant.table.with_scope(LifecycleScope(OrgId(tenant.org_id), "export"))


def lines_of(tenant: Tenant, **options: object) -> list[bytes]:
    return list(run_all(Export(reader(tenant), OrgId(tenant.org_id), source="test", **options).lines()))  # type: ignore[arg-type]


def items_of(lines: list[bytes]) -> list[dict[str, object]]:
    return [line for line in map(orjson.loads, lines) if "item" in line]


def test_export__every_exported_kind__no_secret__nothing_else(whole: Complete, make_tenant: TenantFactory) -> None:
    other = complete(make_tenant("Other"))
    with calls.listening() as log:
        lines = lines_of(whole.tenant)

    header, end = orjson.loads(lines[0]), orjson.loads(lines[-1])
    records = items_of(lines)
    assert header["format"] == "hr-export" and header["version"] == 1 and header["orgId"] == whole.tenant.org_id
    exported = {kind.tag for kind in kinds.kinds_where(export=Exported.INCLUDED)}
    assert {record["kind"] for record in records} == exported
    assert end == {"end": {"items": len(records), "kinds": dict(Counter(str(r["kind"]) for r in records))}}
    text = b"".join(lines)
    assert whole.api_key.secret_hash.encode() not in text  # neither the record's hash nor the lookup item
    assert whole.secret.encode() not in text
    [hook] = run(webhook_endpoints.list_endpoints(whole.tenant.table, consistent=True))
    assert hook.secret is not None and hook.secret.encode() not in text  # a webhook's signing secret neither
    assert b"PersistedDocument" not in text
    assert other.tenant.org_id.encode() not in text and other.employee.email.encode() not in text
    assert set(log.operations()) <= {"Query", "BatchGetItem", "GetItem"}


def test_export__twice__the_same_item_lines(whole: Complete) -> None:
    first, second = lines_of(whole.tenant), lines_of(whole.tenant)

    assert first[1:] == second[1:]  # the header differs by its time


def test_export__meter_counts_calls_and_read_units(whole: Complete) -> None:
    job = Export(reader(whole.tenant), OrgId(whole.tenant.org_id), source="test")
    with calls.listening() as log:
        run_all(job.lines())
    job.meter.settle()

    assert job.meter.calls == len(log.snapshot())
    assert job.meter.read_units == pytest.approx(sum(call.read_units for call in log.snapshot()))
    assert job.meter.read_units > 0


def test_export__resumed_after_any_checkpoint__the_rest_of_the_same_export(whole: Complete) -> None:
    resumes: list[Resume] = []

    def checkpoint(resume: Resume) -> str:
        resumes.append(Resume(resume.position, type(resume.tally)(resume.tally.kinds.copy()), resume.exported_at))
        return str(len(resumes) - 1)

    full = lines_of(whole.tenant, checkpoint=checkpoint, every=7)
    checkpoints = [n for n, line in enumerate(full) if line.startswith(b'{"checkpoint"')]
    assert len(checkpoints) >= 3
    for n in checkpoints:
        resume = resumes[int(orjson.loads(full[n])["checkpoint"])]
        rest = lines_of(whole.tenant, resume=resume)
        assert [line for line in rest] == [line for line in full[n + 1 :] if not line.startswith(b'{"checkpoint"')]


def test_export__an_organisation_being_restored__refused(whole: Complete, client: DynamoDBClient) -> None:
    client.update_item(
        TableName=whole.tenant.table.name,
        Key=layout.ORGANIZATION.key_at(whole.tenant.org_id).wire(),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "restoring"}},
    )
    with pytest.raises(Conflict, match="being restored"):
        run(export.organization_to_export(reader(whole.tenant), OrgId(whole.tenant.org_id)))


def test_export__no_such_organisation__not_found(whole: Complete) -> None:
    missing = OrgId(ids.new_id())
    with pytest.raises(NotFound):
        run(export.organization_to_export(reader(whole.tenant).with_scope(LifecycleScope(missing, "export")), missing))


def test_export__a_kind_without_a_row__stops_the_export(whole: Complete, client: DynamoDBClient) -> None:
    bogus = {keys.PK: {"S": keys.org_pk(whole.tenant.org_id)}, keys.SK: {"S": "BOGUS#1"}, ENTITY: {"S": "Bogus"}}
    client.put_item(TableName=whole.tenant.table.name, Item=bogus)

    with pytest.raises(export.UnclassifiedKind, match="'Bogus'"):
        lines_of(whole.tenant)


def test_record__an_audit_event_after_the_export__naming_the_items(whole: Complete) -> None:
    job = Export(reader(whole.tenant), OrgId(whole.tenant.org_id), source="test")
    lines = run_all(job.lines())

    run(export.record(whole.tenant.table, OrgId(whole.tenant.org_id), job.tally))

    [latest] = run(audit.list_audit_events(whole.tenant.table, PageRequest(first=1))).items
    assert latest.action == "organization.export"
    assert latest.actor_id == whole.tenant.admin.emp_id
    assert [(c.field, c.after) for c in latest.changes] == [("items", job.tally.items)]
    assert b"organization.export" not in b"".join(lines)
