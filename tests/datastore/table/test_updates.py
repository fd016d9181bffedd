"""Update expressions from typed actions: their spelling, and a real UpdateItem through them."""

from __future__ import annotations

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.aws import calls
from datastore.errors import Conflict
from datastore.kinds import layout
from datastore.table import transact, updates
from datastore.values import ids, items
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.support import raw_get


def test_build__mixed_actions__one_clause_each_in_set_remove_add_order() -> None:
    built = updates.build(
        [
            updates.Add("count", items.n(2)),
            updates.Set("status", items.s("open")),
            updates.Remove("closedAt"),
            updates.Set("name", items.s("Ada")),
        ]
    )
    assert built.expression == "SET #u0 = :u0, #u1 = :u1 REMOVE #u2 ADD #u3 :u2"
    assert built.names == {"#u0": "status", "#u1": "name", "#u2": "closedAt", "#u3": "count"}
    assert built.values == {":u0": items.s("open"), ":u1": items.s("Ada"), ":u2": items.n(2)}


def test_build__attribute_and_if_not_exists__one_placeholder_per_attribute_name() -> None:
    built = updates.build(
        [
            updates.Set("status", items.s("restoring")),
            updates.Set("statusBeforeLock", updates.attribute("status")),
            updates.Set("firstSeen", updates.if_not_exists("firstSeen", items.s("2026-01-01"))),
        ]
    )
    assert built.expression == "SET #u0 = :u0, #u1 = #u0, #u2 = if_not_exists(#u2, :u1)"
    assert built.names == {"#u0": "status", "#u1": "statusBeforeLock", "#u2": "firstSeen"}
    assert built.values == {":u0": items.s("restoring"), ":u1": items.s("2026-01-01")}


def test_build__no_action__refused() -> None:
    with pytest.raises(ValueError, match="at least one action"):
        updates.build([])


def test_build__one_attribute_changed_twice__refused() -> None:
    with pytest.raises(ValueError, match="each attribute once"):
        updates.build([updates.Set("status", items.s("a")), updates.Remove("status")])


def test_transact_update__condition_placeholders_kept_beside_the_update_s() -> None:
    key = layout.DEPARTMENT.key_at("org", "dept")
    op = transact.update(
        key,
        [updates.Set("status", items.s("closed"))],
        condition="#status = :open",
        names={"#status": "status"},
        values={":open": items.s("open")},
    )
    assert op.kind == "Update"
    assert op.params == {
        "Key": key.wire(),
        "UpdateExpression": "SET #u0 = :u0",
        "ConditionExpression": "#status = :open",
        "ExpressionAttributeNames": {"#u0": "status", "#status": "status"},
        "ExpressionAttributeValues": {":u0": items.s("closed"), ":open": items.s("open")},
    }


def test_transact_update__condition_placeholder_taken_by_the_update__refused() -> None:
    with pytest.raises(ValueError, match=":u0"):
        transact.update(
            layout.DEPARTMENT.key_at("org", "dept"),
            [updates.Set("status", items.s("closed"))],
            condition="#s = :u0",
            names={"#s": "status"},
            values={":u0": items.s("open")},
        )


def test_update_item__every_action_on_dynamodb_local__item_as_the_actions_say(
    client: DynamoDBClient, tenant: Tenant
) -> None:
    # "name", "status" and "count" are DynamoDB reserved words: spelt bare, the update would fail.
    key = layout.DEPARTMENT.key_at(tenant.org_id, ids.new_id())
    start = {
        **key.wire(),
        "entity": items.s("Probe"),
        "name": items.s("before"),
        "status": items.s("open"),
        "count": items.n(5),
        "note": items.s("to go"),
        "kept": items.s("already"),
        "version": items.n(3),
    }
    run(tenant.table.write([transact.put(start)]))
    op = transact.update(
        key,
        [
            updates.Set("name", items.s("after")),
            updates.Set("status", items.s("closed")),
            updates.Set("statusBefore", updates.attribute("status")),
            updates.Set("kept", updates.if_not_exists("kept", items.s("default"))),
            updates.Set("fresh", updates.if_not_exists("fresh", items.s("default"))),
            updates.Remove("note"),
            updates.Add("count", items.n(-2)),
            updates.Add("version", items.n(1)),
        ],
        condition="#version = :expected",
        names={"#version": "version"},
        values={":expected": items.n(3)},
    )
    with calls.listening() as log:
        run(tenant.table.write([op]))
    assert log.operations() == ["UpdateItem"]
    assert raw_get(client, tenant.table.name, key) == {
        **key.wire(),
        "entity": items.s("Probe"),
        "name": items.s("after"),
        "status": items.s("closed"),
        "statusBefore": items.s("open"),
        "kept": items.s("already"),
        "fresh": items.s("default"),
        "count": items.n(3),
        "version": items.n(4),
    }


def test_update_item__condition_fails_on_dynamodb_local__handler_error_and_item_unchanged(
    client: DynamoDBClient, tenant: Tenant
) -> None:
    key = layout.DEPARTMENT.key_at(tenant.org_id, ids.new_id())
    start = {**key.wire(), "entity": items.s("Probe"), "status": items.s("open")}
    run(tenant.table.write([transact.put(start)]))
    op = transact.update(
        key,
        [updates.Set("status", items.s("closed"))],
        condition="#status = :draft",
        names={"#status": "status"},
        values={":draft": items.s("draft")},
        on_failed=lambda old: Conflict(f"status was {None if old is None else old['status']['S']}"),
    )
    with pytest.raises(Conflict, match="status was open"):
        run(tenant.table.write([op]))
    assert raw_get(client, tenant.table.name, key) == start
