"""Offboarding: closed at once, every item deleted after the grace period, a receipt kept."""

from __future__ import annotations

from datetime import timedelta

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.errors import Conflict
from datastore.kinds import layout
from datastore.kinds.entities import Identity, Organization, OrganizationStatus, Plan
from datastore.lifecycle import offboarding
from datastore.lifecycle.offboarding import NotYet
from datastore.signin import api_keys, identities, identity_providers, sessions
from datastore.table.pagination import every
from datastore.table.scoped import Table
from datastore.tenancy.scope import ApiKeyScope, LifecycleScope, PlatformScope, SignInScope, TenantScope
from datastore.tenants import organizations
from datastore.values import items
from datastore.values.ids import OrgId
from tests.blocking import run, run_all
from tests.conftest import TenantFactory
from tests.datastore.lifecycle.complete import LIFETIMES, Complete, complete
from tests.datastore.lifecycle.support import counted, everything, fingerprint


@pytest.fixture
def whole(make_tenant: TenantFactory) -> Complete:
    return complete(make_tenant())


def closer(whole: Complete) -> Table:
    org_id = OrgId(whole.tenant.org_id)
    return whole.tenant.table.with_scope(LifecycleScope(org_id, "offboard", "operator-7"))


def test_offboard__every_item_deleted__a_receipt_by_kind__others_untouched(
    whole: Complete, make_tenant: TenantFactory
) -> None:
    org_id = OrgId(whole.tenant.org_id)
    other = complete(make_tenant("Other"))
    others = fingerprint(whole.tenant.table, other.tenant.org_id)
    before = counted(whole.tenant.table, org_id)
    closed = run(offboarding.close(closer(whole), org_id, grace=timedelta(0)))
    before[layout.AUDIT_EVENT.tag] += 1  # the organization.close event

    receipt = run(offboarding.delete(closer(whole), org_id))

    assert everything(whole.tenant.table, org_id) == []
    assert dict(receipt.deleted) == dict(sorted(before.items()))
    assert receipt.requested_by == "operator-7" and receipt.closed_at == closed.receipt.closed_at
    assert receipt.started_at is not None and receipt.finished_at is not None
    assert run(offboarding.receipt_of(closer(whole), org_id)) == receipt
    assert fingerprint(whole.tenant.table, other.tenant.org_id) == others
    platform = whole.tenant.table.with_scope(PlatformScope())
    assert org_id not in {org.org_id for org in _organizations(platform)}


def test_offboard__emails_and_domains_released(whole: Complete, platform: Table) -> None:
    org_id = OrgId(whole.tenant.org_id)
    run(offboarding.close(closer(whole), org_id, grace=timedelta(0)))
    run(offboarding.delete(closer(whole), org_id))

    assert run(identities.find_identity(platform.with_scope(SignInScope()), whole.employee.email)) is None
    assert run(api_keys.find_grant(platform.with_scope(ApiKeyScope()), whole.secret)) is None
    sign_in = platform.with_scope(SignInScope())
    assert run(identity_providers.find_client(sign_in, whole.issuer, "web")) is None
    assert run(identity_providers.find_client(sign_in, whole.issuer, "mobile")) is None
    # A refresh token's lookup is named by nothing the organisation held: TTL deletes it, and
    # until then its session is gone, so a refresh is refused.
    grant = run(sessions.find_grant(sign_in, whole.refresh_token))
    assert grant is not None and grant.expires_at <= items.now() + LIFETIMES.absolute
    with pytest.raises(sessions.RefreshRefused, match="gone"):
        run(
            sessions.rotate(
                platform.with_scope(TenantScope(org_id)), grant, whole.refresh_token, LIFETIMES, successor_key=b"k" * 32
            )
        )
    # The domain is free: a new organisation may own it, with the same admin email.
    org, _admin = run(organizations.create_organization(
        platform, name="Successor", plan=Plan.FREE, email_domains=[whole.tenant.domain],
        admin_email=whole.employee.email, admin_first_name="New", admin_last_name="Owner",
    ))  # fmt: skip
    assert org.email_domains == (whole.tenant.domain,)


def test_close__closing_at_once__data_kept_through_the_grace_period(whole: Complete) -> None:
    org_id = OrgId(whole.tenant.org_id)
    before = counted(whole.tenant.table, org_id)

    closed = run(offboarding.close(closer(whole), org_id, grace=timedelta(days=30)))

    assert closed.organization.status is OrganizationStatus.CLOSING
    assert closed.receipt.delete_after == closed.receipt.closed_at + timedelta(days=30)
    assert run(organizations.get_organization(whole.tenant.table)).status is OrganizationStatus.CLOSING  # type: ignore[union-attr]
    with pytest.raises(NotYet, match="deleted after"):
        run(offboarding.delete(closer(whole), org_id))
    after = counted(whole.tenant.table, org_id)
    assert after - before == {layout.AUDIT_EVENT.tag: 1}
    # After the period, it goes.
    run(offboarding.delete(closer(whole), org_id, now=closed.receipt.delete_after + timedelta(seconds=1)))
    assert everything(whole.tenant.table, org_id) == []


def test_close__twice__the_first_receipt(whole: Complete) -> None:
    org_id = OrgId(whole.tenant.org_id)
    first = run(offboarding.close(closer(whole), org_id, grace=timedelta(days=1)))
    again = run(offboarding.close(closer(whole), org_id, grace=timedelta(days=5)))
    assert again.receipt == first.receipt


def test_delete__never_closed__not_yet(whole: Complete) -> None:
    with pytest.raises(NotYet, match="not closed"):
        run(offboarding.delete(closer(whole), OrgId(whole.tenant.org_id)))


def test_close__an_organisation_being_restored__conflict(whole: Complete, client: DynamoDBClient) -> None:
    client.update_item(
        TableName=whole.tenant.table.name,
        Key=layout.ORGANIZATION.key_at(whole.tenant.org_id).wire(),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "restoring"}},
    )
    with pytest.raises(Conflict, match="RESTORING"):
        run(offboarding.close(closer(whole), OrgId(whole.tenant.org_id), grace=timedelta(0)))


def test_delete__interrupted__resumed__the_receipt_counts_everything_once(
    whole: Complete, monkeypatch: pytest.MonkeyPatch
) -> None:
    org_id = OrgId(whole.tenant.org_id)
    run(offboarding.close(closer(whole), org_id, grace=timedelta(0)))
    before = counted(whole.tenant.table, org_id)
    seen: list[int] = []

    def crash(progress: offboarding.Progress) -> None:
        seen.append(progress.deleted)
        if progress.deleted > 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(offboarding.delete(closer(whole), org_id, on_progress=crash))
    left = counted(whole.tenant.table, org_id)
    assert 0 < sum(left.values()) < sum(before.values())
    assert left[layout.ORGANIZATION.tag] == 1  # the root goes last

    receipt = run(offboarding.delete(closer(whole), org_id))

    assert everything(whole.tenant.table, org_id) == []
    assert dict(receipt.deleted) == dict(sorted(before.items()))


def test_delete__an_identity_another_organisation_took__left_alone(
    whole: Complete, make_tenant: TenantFactory, client: DynamoDBClient
) -> None:
    """Released only if it still names the organisation."""
    org_id = OrgId(whole.tenant.org_id)
    other = make_tenant("Other")
    run(offboarding.close(closer(whole), org_id, grace=timedelta(0)))
    table = whole.tenant.table
    taken = layout.IDENTITY.item(Identity(whole.employee.email, other.org_id, other.admin.emp_id))
    client.put_item(TableName=table.name, Item=taken)

    run(offboarding.delete(closer(whole), org_id))

    assert (
        client.get_item(TableName=table.name, Key=layout.IDENTITY.key_at(whole.employee.email).wire())["Item"] == taken
    )


def test_describe__the_receipt_in_lines(whole: Complete) -> None:
    org_id = OrgId(whole.tenant.org_id)
    run(offboarding.close(closer(whole), org_id, grace=timedelta(0)))
    receipt = run(offboarding.delete(closer(whole), org_id))

    lines = offboarding.describe(receipt)

    assert lines[0].startswith(f"organisation {org_id} ({whole.tenant.organization.name}), closed ")
    assert "by operator-7" in lines[0]
    assert lines[2].startswith(f"  {sum(receipt.deleted.values())} items: ")


def _organizations(platform: Table) -> list[Organization]:
    return list(run_all(every(lambda request: organizations.list_organizations(platform, request))))
