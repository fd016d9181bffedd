"""Maximum number of aliased fields in a document.

Like Strawberry's MaxAliasesLimiter (a spread fragment counts each time it is spread), but
each fragment is counted once and multiplied, so a chain of fragments each spread twice
cannot make validation itself exponential.
"""

from __future__ import annotations

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)
from strawberry.extensions import AddValidationRules

from graphql_api.execution.selection import fragments_of, spread_once
from graphql_api.limits.document_rule import document_rule


def alias_count(
    selection_set: SelectionSetNode | None,
    fragments: dict[str, FragmentDefinitionNode],
    memo: dict[str, int],
    visiting: frozenset[str] = frozenset(),
) -> int:
    if selection_set is None:
        return 0
    total = 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            total += (1 if selection.alias else 0) + alias_count(selection.selection_set, fragments, memo, visiting)
        elif isinstance(selection, InlineFragmentNode):
            total += alias_count(selection.selection_set, fragments, memo, visiting)
        elif isinstance(selection, FragmentSpreadNode):
            key = selection.name.value
            counted = spread_once(
                selection, fragments, memo, key, visiting, lambda inner, seen: alias_count(inner, fragments, memo, seen)
            )
            total += counted or 0
    return total


class MaxAliases(AddValidationRules):
    def __init__(self, max_aliases: int) -> None:
        self.max_aliases = max_aliases
        super().__init__([document_rule(too_many_aliases, max_aliases)])


def too_many_aliases(document: DocumentNode, limit: int) -> list[GraphQLError]:
    fragments = fragments_of(document)
    memo: dict[str, int] = {}
    count = sum(
        alias_count(d.selection_set, fragments, memo)
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
    )
    if count <= limit:
        return []
    return [
        GraphQLError(
            f"the query has {count} aliases; at most {limit} are allowed",
            extensions={"limit": "aliases", "aliases": count, "maxAliases": limit},
        )
    ]
