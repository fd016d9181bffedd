"""Walking one organisation: every kind reached, by Queries and GetItems, in a resumable order."""

from __future__ import annotations

from collections import Counter

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.aws import calls
from datastore.kinds.model import ENTITY
from datastore.lifecycle import walk
from datastore.lifecycle.walk import Walk
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import LifecycleScope
from tests.blocking import run_all
from tests.conftest import TenantFactory
from tests.datastore.lifecycle.complete import Complete, complete
from tests.datastore.lifecycle.test_kinds import OWNED


@pytest.fixture
def whole(make_tenant: TenantFactory) -> Complete:
    return complete(make_tenant())


def _walker(whole: Complete, purpose: str = "offboard") -> Table:
    return whole.tenant.table.with_scope(LifecycleScope(whole.tenant.organization.org_id, purpose))  # type: ignore[arg-type]


def test_walk__reaches_an_item_of_every_owned_kind__with_queries_and_gets_only(
    whole: Complete, make_tenant: TenantFactory
) -> None:
    """Fails when a kind's partition is not reached: a kind added without a way to it."""
    other = complete(make_tenant("Other"))
    with calls.listening() as log:
        everything = [item for _family, item in run_all(Walk(_walker(whole), whole.tenant.organization.org_id))]

    assert set(Counter(item[ENTITY]["S"] for item in everything)) == OWNED
    assert all(item.get("orgId", {}).get("S", whole.tenant.org_id) == whole.tenant.org_id for item in everything)
    assert not any(keys.in_tenant(item[keys.PK]["S"], other.tenant.org_id) for item in everything)
    assert set(log.operations()) == {"Query", "BatchGetItem"}
    # The document slots: 4,096 keys, 100 a call.
    assert log.count("BatchGetItem") >= walk.DOCUMENT_SLOTS // 100


def test_walk__in_order__and_resumes_after_any_position(whole: Complete) -> None:
    families = [f for f in walk.FAMILIES if f is not walk.DOCUMENTS]  # 4,096 probes: once above is enough
    org_id = whole.tenant.organization.org_id
    walked = [
        (family.name, item[keys.PK]["S"], item[keys.SK]["S"])
        for family, item in run_all(Walk(_walker(whole), org_id, families=families))
    ]

    order = [(walk.FAMILY_NAMES.index(name), pk, sk) for name, pk, sk in walked]
    assert order == sorted(order)
    for cut in (0, 1, len(walked) // 3, len(walked) // 2, len(walked) - 2):
        position = walk.Position(*walked[cut])
        rest = [
            (family.name, item[keys.PK]["S"], item[keys.SK]["S"])
            for family, item in run_all(Walk(_walker(whole), org_id, families=families).items(position))
        ]
        assert rest == walked[cut + 1 :], cut


def test_walk__an_identity_another_organisation_holds__is_not_read_back(
    whole: Complete, make_tenant: TenantFactory, client: DynamoDBClient
) -> None:
    """A pointer naming an email whose identity is another organisation's (inconsistent data)."""
    other = make_tenant("Other")
    org_id = whole.tenant.organization.org_id
    pointer = {
        keys.PK: {"S": keys.org_pk(org_id)},
        keys.SK: {"S": f"EMAIL#{other.admin.email}"},
        ENTITY: {"S": "EmailPointer"},
        "orgId": {"S": org_id},
        "empId": {"S": whole.employee.emp_id},
    }
    client.put_item(TableName=whole.tenant.table.name, Item=pointer)
    foreign: list[str] = []

    walked = list(
        run_all(
            Walk(
                _walker(whole), org_id, families=[walk.ROOT, walk.IDENTITIES], on_foreign=lambda i: foreign.append("x")
            )
        )
    )

    identities = [item for family, item in walked if family is walk.IDENTITIES]
    assert other.admin.email not in {item["email"]["S"] for item in identities}
    assert foreign == ["x"]
