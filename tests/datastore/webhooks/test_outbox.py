"""Endpoints and the outbox on DynamoDB Local: limits, audit without secrets, deliveries written once."""

from __future__ import annotations

import pytest

from datastore.errors import InvalidInput
from datastore.kinds.webhook_entities import DeliveryStatus
from datastore.table.pagination import PageRequest
from datastore.tenants import departments
from datastore.webhooks import endpoints, outbox
from datastore.writes import audit
from tests.blocking import run
from tests.conftest import Tenant


def test_create_endpoint__past_20__refused_with_nothing_written(tenant: Tenant) -> None:
    for n in range(endpoints.MAX_ENDPOINTS):
        run(endpoints.create_endpoint(tenant.table, url_text=f"https://hooks.example/{n}", types=["employee.*"]))
    with pytest.raises(InvalidInput, match="at most 20"):
        run(endpoints.create_endpoint(tenant.table, url_text="https://hooks.example/21", types=["employee.*"]))
    assert len(run(endpoints.list_endpoints(tenant.table, consistent=True))) == endpoints.MAX_ENDPOINTS


@pytest.mark.parametrize("types", [[], ["employee"], ["nothing.create"], ["employee.*x"], ["*"]])
def test_event_types__malformed__refused(types: list[str]) -> None:
    with pytest.raises(InvalidInput):
        endpoints.event_types(types)


def test_create_and_rotate__audited_without_any_secret(tenant: Tenant) -> None:
    made = run(endpoints.create_endpoint(tenant.table, url_text="https://hooks.example/a", types=["department.*"]))
    rotated = run(endpoints.rotate_secret(tenant.table, made.endpoint_id))
    assert made.secret is not None and made.secret.startswith("whsec_")
    assert rotated.previous_secret == made.secret and rotated.secret != made.secret
    trail = run(audit.list_audit_events(tenant.table, PageRequest(first=10))).items
    actions = [event.action for event in trail]
    assert actions[:2] == ["webhookEndpoint.rotateSecret", "webhookEndpoint.create"]
    text = repr(trail)
    assert made.secret not in text and (rotated.secret or "") not in text


def test_enqueue__twice_over_the_same_events__each_delivery_written_once_and_only_matching(tenant: Tenant) -> None:
    hook = run(endpoints.create_endpoint(tenant.table, url_text="https://hooks.example/a", types=["department.create"]))
    for n in range(3):
        run(departments.create_department(tenant.table, name=f"D{n}"))
    listed = run(endpoints.list_endpoints(tenant.table, consistent=True))
    start = outbox.start_after(listed, None, back=outbox.KEEP_FOR)
    assert start is not None
    first = run(outbox.enqueue(tenant.table, listed, start))
    again = run(outbox.enqueue(tenant.table, listed, start))
    assert len(first.written) == 3 and again.written == []
    assert {each.event_type for each in first.written} == {"department.create"}
    pending = run(outbox.pending(tenant.table, hook.endpoint_id, limit=10))
    assert [each.event_id for each in pending] == sorted(each.event_id for each in first.written)
    assert {each.status for each in pending} == {DeliveryStatus.PENDING}


def test_organisations_with_endpoints__lists_only_organisations_that_have_one(
    make_tenant: object, tenant: Tenant
) -> None:
    run(endpoints.create_endpoint(tenant.table, url_text="https://hooks.example/a", types=["employee.*"]))
    index = tenant.table.with_scope(outbox.WebhooksScope())
    assert tenant.org_id in run(outbox.organisations_with_endpoints(index))
