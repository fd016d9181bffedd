"""Maximum query depth, not counting Relay's ``edges``/``node`` levels nor ``ofType``.

Depth is the number of nested fields on the longest path, leaves included:
``{ me { email } }`` is 2. A ``node`` field directly under ``edges`` and the ``edges`` field
itself add nothing, so a connection costs one level like a plain list. Introspection is
measured like everything else, with one such exception: ``ofType``, a type reference's next
wrapper, adds no level. It nests only as deep as the schema wraps a type (null past that,
so it multiplies nothing), and GraphiQL's and the code generators' introspection query
nests it nine deep; without it that query is 6 levels deep (``__schema types fields args
type name``), within the default. Levels are skipped by the field's *name*, never by an
alias. Each fragment's depth is computed once, so one fragment spread many times (or a chain
of them) costs linear time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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

# Fields that add no level wherever they are (``node`` adds none directly under ``edges``).
NO_LEVEL = frozenset({"edges", "ofType"})


def document_depth(
    selection_set: SelectionSetNode | None,
    fragments: dict[str, FragmentDefinitionNode],
    *,
    under_edges: bool = False,
    _memo: dict[tuple[str, bool], int] | None = None,
    _visiting: frozenset[str] = frozenset(),
) -> int:
    if selection_set is None:
        return 0
    memo = {} if _memo is None else _memo
    deepest = 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            name = selection.name.value
            skipped = name in NO_LEVEL or (under_edges and name == "node")
            below = document_depth(
                selection.selection_set,
                fragments,
                under_edges=name == "edges",
                _memo=memo,
                _visiting=_visiting,
            )
            deepest = max(deepest, below + (0 if skipped else 1))
        elif isinstance(selection, InlineFragmentNode):
            deepest = max(
                deepest,
                document_depth(
                    selection.selection_set,
                    fragments,
                    under_edges=under_edges,
                    _memo=memo,
                    _visiting=_visiting,
                ),
            )
        elif isinstance(selection, FragmentSpreadNode):
            measured = spread_once(
                selection,
                fragments,
                memo,
                (selection.name.value, under_edges),
                _visiting,
                lambda inner, seen: document_depth(
                    inner, fragments, under_edges=under_edges, _memo=memo, _visiting=seen
                ),
            )
            deepest = max(deepest, measured or 0)
    return deepest


class MaxDepth(AddValidationRules):
    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        super().__init__([document_rule(too_deep, max_depth)])


def too_deep(document: DocumentNode, limit: int) -> Iterator[GraphQLError]:
    fragments = fragments_of(document)
    memo: dict[tuple[str, bool], int] = {}
    for operation in document.definitions:
        if not isinstance(operation, OperationDefinitionNode):
            continue
        depth = document_depth(operation.selection_set, fragments, _memo=memo)
        if depth > limit:
            yield _error(depth, limit, operation)


def _error(depth: int, limit: int, operation: Any) -> GraphQLError:
    return GraphQLError(
        f"the query is {depth} levels deep; at most {limit} are allowed",
        operation,
        extensions={"limit": "depth", "depth": depth, "maxDepth": limit},
    )
