"""schema-check's comparison on schemas of its own: changes, failing operations, and what still
selects each deprecated member with when it was last seen (the command's own cases are in
tests/test_server_schema_check.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import graphql

from graphql_api.schema.evolution import ClientOperation, check

OLD = graphql.build_schema("type Query { a: Int b: Int gone: Int }")
NEW = graphql.build_schema('type Query { a: Int @deprecated(reason: "Use b.") b: Int }')


def test_check__deprecated_member__lists_who_selects_it_latest_first_with_last_seen() -> None:
    seen = datetime(2026, 11, 20, tzinfo=UTC)
    operations = [
        ClientOperation("trusted", "sha256:1", "query Old { a }"),
        ClientOperation("persisted", "abc", "query Older { a b }", "ORG1", seen),
        ClientOperation("persisted", "def", "query New { b }", "ORG2", seen),
    ]
    report = check(OLD, NEW, operations, against="old.graphql")
    assert report.ok
    reason, uses = report.deprecated["Query.a"]
    assert reason == "Use b."
    assert [(use.name, use.operation.key) for use in uses] == [("Older", "abc"), ("Old", "sha256:1")]
    lines = list(report.lines())
    assert "  Query.a (Use b.): used by 2 operations" in lines
    assert "    Older (persisted abc of organisation ORG1), last seen 2026-11-20" in lines
    assert "    Old (trusted sha256:1)" in lines
    assert report.to_json()["deprecated"][0]["usedBy"][0]["lastSeen"] == seen.isoformat()


def test_check__operation_using_a_removed_field__fails_naming_it_with_the_reason() -> None:
    report = check(OLD, NEW, [ClientOperation("manifest", "x", "query Q { gone } query P { b }")], against="o")
    assert not report.ok
    assert [(failure.name, failure.errors) for failure in report.failures] == [
        ("Q", ("Cannot query field 'gone' on type 'Query'. (line 1)",)),
        ("P", ("Cannot query field 'gone' on type 'Query'. (line 1)",)),
    ]
    assert [change.kind for change in report.breaking] == ["FIELD_REMOVED"]


def test_check__unparsable_document__fails_with_the_syntax_error() -> None:
    report = check(OLD, NEW, [ClientOperation("manifest", "x", "query {")], against="o")
    assert [failure.errors[0].startswith("Syntax Error") for failure in report.failures] == [True]
