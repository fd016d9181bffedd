"""Maximum number of aliased fields in a document.

Like Strawberry's MaxAliasesLimiter (a spread fragment counts each time it is spread), but
each fragment is counted once and multiplied, so a chain of fragments each spread twice
cannot make validation itself exponential.
"""

from __future__ import annotations

import functools

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
)
from strawberry.extensions import AddValidationRules

from graphql_api.selection import fragments_of


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
            name = selection.name.value
            fragment = fragments.get(name)
            if fragment is None or name in visiting:
                continue
            if name not in memo:
                memo[name] = alias_count(fragment.selection_set, fragments, memo, visiting | {name})
            total += memo[name]
    return total


class MaxAliases(AddValidationRules):
    def __init__(self, max_aliases: int) -> None:
        self.max_aliases = max_aliases
        super().__init__([_rule(max_aliases)])


@functools.cache
def _rule(limit: int) -> type[ValidationRule]:
    """The validation rule for ``limit``, made once: Strawberry builds the extension for every
    request, and a class made per request is cyclic garbage (a class refers to itself)."""

    class MaxAliasesRule(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            definitions = context.document.definitions
            fragments = fragments_of(context.document)
            memo: dict[str, int] = {}
            count = sum(
                alias_count(d.selection_set, fragments, memo)
                for d in definitions
                if isinstance(d, OperationDefinitionNode)
            )
            if count > limit:
                context.report_error(
                    GraphQLError(
                        f"the query has {count} aliases; at most {limit} are allowed",
                        extensions={"limit": "aliases", "aliases": count, "maxAliases": limit},
                    )
                )

    return MaxAliasesRule
