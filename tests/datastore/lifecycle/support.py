"""Helpers of the lifecycle tests: exports to files, item counts, raw copies of a tenant."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from datastore.kinds.model import ENTITY
from datastore.lifecycle import walk
from datastore.lifecycle.export import Export
from datastore.table.scoped import Table
from datastore.tenancy.scope import LifecycleScope
from datastore.values import ids
from datastore.values.ids import OrgId
from datastore.values.items import Item
from tests.blocking import run_all
from tests.conftest import provisioned, table_on
from tests.datastore.support import write_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from datastore.aws.client import AsyncDynamo


def exported(table: Table, org_id: str) -> list[bytes]:
    """The export's lines (header first, end line last)."""
    reader = table.with_scope(LifecycleScope(OrgId(org_id), "export"))
    return run_all(Export(reader, OrgId(org_id), source=table.name).lines())


def export_file(table: Table, org_id: str, path: Path) -> Path:
    path.write_bytes(gzip.compress(b"".join(exported(table, org_id))))
    return path


def item_lines(lines: list[bytes]) -> list[bytes]:
    """The item lines, sorted: what a round trip must give back byte for byte (less the
    restores' own audit events, which a restore adds to the trail)."""
    return sorted(line for line in lines if line.startswith(b'{"family"') and RESTORE_EVENT not in line)


RESTORE_EVENT = b'"action":{"S":"organization.restore"}'


def everything(table: Table, org_id: str) -> list[Item]:
    """Every item of the organisation, secrets and documents too (an offboarding's walk)."""
    walker = table.with_scope(LifecycleScope(OrgId(org_id), "offboard"))
    return [item for _family, item in run_all(walk.Walk(walker, OrgId(org_id)))]


def counted(table: Table, org_id: str) -> Counter[str]:
    return Counter(item[ENTITY]["S"] for item in everything(table, org_id))


def fingerprint(table: Table, org_id: str) -> list[bytes]:
    """Every item of the organisation, serialised and sorted: equal only if nothing changed."""
    return sorted(orjson.dumps(item, option=orjson.OPT_SORT_KEYS) for item in everything(table, org_id))


def empty_table(client: DynamoDBClient, dynamo: AsyncDynamo) -> Table:
    name = f"hr-restore-{ids.new_id().lower()}"
    provisioned(client, dynamo, name)
    return table_on(dynamo, name, LifecycleScope(OrgId(ids.new_id()), "restore"), retry=None)  # the client's own policy


def snapshot(client: DynamoDBClient, dynamo: AsyncDynamo, table: Table, org_id: str) -> Table:
    """A table holding a raw copy of the organisation's every item: what a point-in-time
    recovery of the table would hold of it."""
    copy = empty_table(client, dynamo)
    write_items(client, copy.name, everything(table, org_id))
    return copy
