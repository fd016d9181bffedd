"""The table's data-layout version: stamped on new tables, found on old ones, checked at start-up."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo
from datastore.kinds import layout
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import LayoutScope, PlatformScope
from datastore.upkeep import layout_version
from datastore.upkeep.layout_version import CURRENT, LayoutChanged, LayoutMismatch
from datastore.upkeep.provision import ensure_table
from datastore.values import ids
from tests.blocking import run
from tests.conftest import TEST_RETRY, provisioned
from tests.datastore.support import drop_table, raw_get
from tests.legacy_layout import create_legacy_table, typical_organization

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


def own_table(client: DynamoDBClient, dynamo: AsyncDynamo, *, legacy: bool) -> Iterator[Table]:
    name = f"hr-layout-{ids.new_id().lower()}"
    if legacy:
        create_legacy_table(client, name)
    else:
        provisioned(client, dynamo, name)
    yield Table(dynamo, name, LayoutScope(), retry=TEST_RETRY)
    drop_table(client, name)


@pytest.fixture
def new_table(client: DynamoDBClient, dynamo: AsyncDynamo) -> Iterator[Table]:
    yield from own_table(client, dynamo, legacy=False)


@pytest.fixture
def legacy_table(client: DynamoDBClient, dynamo: AsyncDynamo) -> Iterator[Table]:
    """A table as the previous release created it: no version item."""
    yield from own_table(client, dynamo, legacy=True)


def test_ensure_table__new_table__stamped_with_the_current_layout(new_table: Table, client: DynamoDBClient) -> None:
    assert run(layout_version.stored_version(new_table)) == CURRENT
    item = raw_get(client, new_table.name, layout.LAYOUT_VERSION_ITEM.key_at())
    assert item is not None and item["entity"] == {"S": "LayoutVersion"}


def test_ensure_table__existing_table__left_unstamped(legacy_table: Table, client: DynamoDBClient) -> None:
    assert run(ensure_table(client, legacy_table)) is False
    assert run(layout_version.stored_version(legacy_table)) is None


def test_check_at_start__current_table__one_get_item_and_nothing_written(new_table: Table) -> None:
    with calls.listening() as log:
        found = run(layout_version.check_at_start(new_table))
    assert found == layout_version.StartupCheck(CURRENT)
    assert log.operations() == ["GetItem"]


def test_check_at_start__data_without_version__layout_0_refused_naming_the_command(
    legacy_table: Table, client: DynamoDBClient
) -> None:
    typical_organization("Old Co", "old.example").write(client, legacy_table.name)

    with pytest.raises(LayoutMismatch) as refused:
        run(layout_version.check_at_start(legacy_table))

    message = str(refused.value)
    assert "\n" not in message
    assert f"table {legacy_table.name} holds organisations but no layout version item" in message
    assert "layout 0" in message and "no name entries" not in message  # what was read, nothing claimed
    assert "`python server.py migrate`" in message and "SERVE_UNMIGRATED_DATA=1" in message
    assert run(layout_version.has_organizations(legacy_table))  # data, and no version: layout 0
    assert run(layout_version.stored_version(legacy_table)) is None  # refusing writes nothing


def test_check_at_start__layout_0_and_serve_anyway__warns_and_writes_nothing(
    legacy_table: Table, client: DynamoDBClient
) -> None:
    typical_organization("Old Co", "old.example").write(client, legacy_table.name)

    with calls.listening() as log:
        found = run(layout_version.check_at_start(legacy_table, serve_anyway=True))

    assert found.version == 0 and not found.stamped
    assert found.warning is not None and found.warning.startswith("WARNING: ")
    assert "`python server.py migrate`" in found.warning
    assert not WRITES & set(log.operations())


def test_check_at_start__empty_table_without_version__stamped_and_served(legacy_table: Table) -> None:
    found = run(layout_version.check_at_start(legacy_table))

    assert found == layout_version.StartupCheck(CURRENT, stamped=True)
    assert run(layout_version.stored_version(legacy_table)) == CURRENT
    with calls.listening() as log:
        assert run(layout_version.check_at_start(legacy_table)) == layout_version.StartupCheck(CURRENT)
    assert log.operations() == ["GetItem"]


def test_check_at_start__layout_of_a_later_release__refused(new_table: Table) -> None:
    run(layout_version.stamp(new_table, CURRENT + 1, over=CURRENT))

    with pytest.raises(LayoutMismatch, match=f"layout {CURRENT + 1}, written by a later release"):
        run(layout_version.check_at_start(new_table))
    later = run(layout_version.check_at_start(new_table, serve_anyway=True))
    assert later.version == CURRENT + 1 and later.warning is not None


def test_stamp__version_moved_since_read__refused(new_table: Table) -> None:
    with pytest.raises(LayoutChanged):
        run(layout_version.stamp(new_table, CURRENT, over=None))  # there is one already
    with pytest.raises(LayoutChanged):
        run(layout_version.stamp(new_table, CURRENT + 1, over=CURRENT - 1))
    assert run(layout_version.stored_version(new_table)) == CURRENT


def test_layout_items__outside_every_tenant_and_only_the_layout_scope_reads_them() -> None:
    key = layout.LAYOUT_VERSION_ITEM.key_at()
    progress = layout.MIGRATION_PROGRESS.key_at(1, ids.new_id())
    assert key.pk == progress.pk == keys.LAYOUT_PK
    assert keys.org_id_of(key.pk) is None and keys.is_layout_pk(key.pk)
    assert LayoutScope().may_read(key.pk) and LayoutScope().may_write(progress.pk)
    assert not LayoutScope().may_read(keys.org_pk(ids.new_id())) and not LayoutScope().may_check(key.pk)
    assert not PlatformScope().may_read(key.pk) and not PlatformScope(provisioning=ids.new_id()).may_write(key.pk)
