"""The members marked @deprecated a document selects, read from the document alone."""

from __future__ import annotations

import graphql

from graphql_api.execution.deprecations import deprecated_members, deprecated_selections

SCHEMA = graphql.build_schema(
    """
    type Query {
      a: Int @deprecated(reason: "Use b.")
      b(x: Int @deprecated, e: E, i: I): Int
      c: C
    }
    type C { old: Int @deprecated(reason: "Gone.") new: Int }
    enum E { ONE TWO @deprecated(reason: "Use ONE.") }
    input I { old: Int @deprecated new: Int }
    """
)


def test_deprecated_selections__field_argument_enum_value_input_field_through_fragments() -> None:
    document = graphql.parse(
        "query Q { a ...F } fragment F on Query { b(x: 1, e: TWO, i: {old: 1}) c { ... on C { old } } }"
        " query R { b(e: ONE, i: {new: 1}) c { new } }"
    )
    assert deprecated_selections(SCHEMA, document, "Q") == ("C.old", "E.TWO", "I.old", "Query.a", "Query.b(x:)")
    assert deprecated_selections(SCHEMA, document, "R") == ()
    assert deprecated_selections(SCHEMA, document, "Missing") == ()
    assert deprecated_selections(SCHEMA, graphql.parse("{ a }")) == ("Query.a",)


def test_deprecated_members__every_marked_member_with_its_reason() -> None:
    assert deprecated_members(SCHEMA) == {
        "C.old": "Gone.",
        "E.TWO": "Use ONE.",
        "I.old": "No longer supported",
        "Query.a": "Use b.",
        "Query.b(x:)": "No longer supported",
    }
