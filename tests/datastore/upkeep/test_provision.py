"""Creating the table, and bringing one an earlier release created up to date: TTL and the stream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from datastore.aws.client import AsyncDynamo
from datastore.kinds import layout
from datastore.table.scoped import Table
from datastore.tenancy.scope import LayoutScope
from datastore.upkeep import layout_version, provision
from datastore.upkeep.provision import StreamMisconfigured, ensure_stream, table_definition
from datastore.values import ids
from tests.blocking import run
from tests.conftest import provisioned
from tests.datastore.support import drop_table, raw_get
from tests.legacy_layout import create_legacy_table, typical_organization

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture
def name(client: DynamoDBClient) -> Iterator[str]:
    table = f"hr-provision-{ids.new_id().lower()}"
    yield table
    drop_table(client, table)


def stream_of(client: DynamoDBClient, name: str) -> dict[str, object]:
    return dict(client.describe_table(TableName=name)["Table"].get("StreamSpecification") or {})


def test_ensure_table__new__stream_with_both_images_and_ttl(
    client: DynamoDBClient, name: str, dynamo: AsyncDynamo
) -> None:
    assert provisioned(client, dynamo, name) is True
    assert stream_of(client, name) == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert provision.stream_arn(client, name) is not None
    ttl = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")


def test_ensure_table__created_the_old_way__stream_turned_on_data_and_layout_kept(
    client: DynamoDBClient, dynamo: AsyncDynamo, name: str
) -> None:
    create_legacy_table(client, name)
    old = typical_organization("Old Co", "old.example").write(client, name)
    assert stream_of(client, name) == {} and provision.stream_arn(client, name) is None
    org_key = layout.ORGANIZATION.key_at(old.org_id)
    before = raw_get(client, name, org_key)

    assert provisioned(client, dynamo, name) is False

    assert stream_of(client, name) == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert before is not None and raw_get(client, name, org_key) == before
    # A table change, not a data change: the layout the data is in has not moved.
    layout_table = Table(dynamo, name, LayoutScope())
    assert run(layout_version.stored_version(layout_table)) is None  # data, no version item: layout 0
    assert run(layout_version.has_organizations(layout_table))
    assert ensure_stream(client, name) is False  # once on, left alone


def test_ensure_stream__stream_of_another_view_type__refused_not_replaced(client: DynamoDBClient, name: str) -> None:
    definition = table_definition(name)
    definition["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}
    client.create_table(**definition)  # type: ignore[arg-type]
    arn = provision.stream_arn(client, name)

    with pytest.raises(StreamMisconfigured, match="KEYS_ONLY"):
        ensure_stream(client, name)
    assert provision.stream_arn(client, name) == arn
