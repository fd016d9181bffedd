"""What a selection set selects: the one walk over fields, fragments and ``@skip``/``@include``.

Execution (graphql-core's ``collect_fields``) decides which fields run. Four readers of a
document must agree with it, and all walk here: the query cost (execution/query_cost.py), the
tenant charge's count of mutation fields (limits/tenant_rate.py), the relations a page
loads (types/relations.py) and the compiled plans (plan/compiler.py). As in execution,
fragments and inline fragments are expanded, a named fragment once per collection, and a
selection under ``@skip(if: true)`` or ``@include(if: false)`` is left out, the condition read
from the operation's coerced variable values (defaults applied: ``variable_values``).

graphql-core's own ``collect_fields`` does not fit: it needs a concrete runtime type, while the
cost is counted over interfaces and unions, and the relations read selections without one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from graphql import (
    BooleanValueNode,
    DirectiveNode,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSchema,
    InlineFragmentNode,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionNode,
    SelectionSetNode,
    ValueNode,
    VariableNode,
)
from graphql.execution.values import get_variable_values

# A memo's key: a fragment's name, or the name with what else its measure depends on.
M = TypeVar("M")

# Whether a fragment's type condition (a type name) applies where it is spread.
Applies = Callable[[str], bool]


def fragments_of(document: DocumentNode) -> dict[str, FragmentDefinitionNode]:
    return {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


def spread_once(
    spread: FragmentSpreadNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    memo: dict[M, int],
    key: M,
    visiting: frozenset[str],
    measure: Callable[[SelectionSetNode, frozenset[str]], int],
) -> int | None:
    """A document limit's measure of a spread fragment, worked out once per ``key``.

    None for a fragment the document does not define or one already being measured (a cycle):
    other validation rules report those. Memoised, a fragment spread many times, or a chain of
    fragments each spread twice, costs linear time, not exponential.
    """
    name = spread.name.value
    fragment = fragments.get(name)
    if fragment is None or name in visiting:
        return None
    if key not in memo:
        memo[key] = measure(fragment.selection_set, visiting | {name})
    return memo[key]


def operations_of(document: DocumentNode, operation_name: str | None) -> list[OperationDefinitionNode]:
    """The operations named ``operation_name``; every operation when it is None."""
    return [
        d
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
        and (operation_name is None or (d.name is not None and d.name.value == operation_name))
    ]


def variable_values(
    schema: GraphQLSchema, operation: OperationDefinitionNode, inputs: Mapping[str, Any] | None
) -> Mapping[str, Any]:
    """The operation's variables as execution will see them: coerced, defaults applied.

    Input that does not coerce is returned as sent: execution refuses it with its own error.
    """
    coerced = get_variable_values(schema, operation.variable_definitions or (), dict(inputs or {}))
    return dict(inputs or {}) if isinstance(coerced, list) else coerced.coerced


class Selections:
    """A document's fragments and an operation's (coerced) variables: what selection sets select."""

    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode], variables: Mapping[str, Any]) -> None:
        self.fragments = fragments
        self.variables = variables

    def fields(
        self, selection_sets: Iterable[SelectionSetNode | None], applies: Applies | None = None
    ) -> Iterator[tuple[FieldNode, str | None]]:
        """The fields ``selection_sets`` select on one level, in document order, each with the
        type condition it sits under (the innermost; None for none).

        Fragments are expanded, each named one once across all of ``selection_sets`` (as
        execution collects the merged fields of one response key); a fragment whose type
        condition ``applies`` rejects is left out (``applies`` None: every one applies).
        """
        visited: set[str] = set()
        for selection_set in selection_sets:
            yield from self._walk(selection_set, None, applies, visited)

    def _walk(
        self, selection_set: SelectionSetNode | None, on: str | None, applies: Applies | None, visited: set[str]
    ) -> Iterator[tuple[FieldNode, str | None]]:
        for selection in () if selection_set is None else selection_set.selections:
            if not self.included(selection):
                continue
            if isinstance(selection, FieldNode):
                yield selection, on
            elif isinstance(selection, InlineFragmentNode):
                condition = None if selection.type_condition is None else selection.type_condition.name.value
                if condition is None or applies is None or applies(condition):
                    yield from self._walk(selection.selection_set, condition or on, applies, visited)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is None or name in visited:
                    continue  # unknown: validation has refused the document already
                visited.add(name)
                condition = fragment.type_condition.name.value
                if applies is None or applies(condition):
                    yield from self._walk(fragment.selection_set, condition, applies, visited)

    def included(self, node: SelectionNode) -> bool:
        """False under ``@skip(if: true)`` or ``@include(if: false)``, literal or variable."""
        for directive in node.directives or ():
            name = directive.name.value
            if name in ("skip", "include") and self._condition(directive) is (name == "skip"):
                return False
        return True

    def _condition(self, directive: DirectiveNode) -> bool:
        for argument in directive.arguments or ():
            if argument.name.value == "if":
                value = argument.value
                if isinstance(value, VariableNode):
                    return self.variables.get(value.name.value) is True
                return isinstance(value, BooleanValueNode) and value.value
        return False  # validation requires ``if``; never reached for a valid document


def _variables_in(value: ValueNode) -> Iterator[str]:
    """The variables a literal reads, however deep (``input: {rows: $rows}``)."""
    if isinstance(value, VariableNode):
        yield value.name.value
    elif isinstance(value, ObjectValueNode):
        for field in value.fields:
            yield from _variables_in(field.value)
    elif isinstance(value, ListValueNode):
        for item in value.values:
            yield from _variables_in(item)


@dataclass(frozen=True, slots=True)
class VariablesRead:
    """The variables one definition's selections read: in ``@skip``/``@include`` conditions, and
    in the field arguments asked about (the cost reads ``first``, say)."""

    conditions: frozenset[str]
    arguments: frozenset[str]


def variables_read(
    definition: OperationDefinitionNode | FragmentDefinitionNode, arguments: frozenset[str] = frozenset()
) -> VariablesRead:
    """What ``definition`` reads of its variables, in one walk of its selections; ``arguments``
    are the names of the field arguments whose variables count."""
    conditions: set[str] = set()
    read: set[str] = set()

    def visit(selection_set: SelectionSetNode | None) -> None:
        if selection_set is None:
            return
        for selection in selection_set.selections:
            for directive in selection.directives or ():
                for argument in directive.arguments or ():
                    if isinstance(argument.value, VariableNode):
                        conditions.add(argument.value.name.value)
            if isinstance(selection, FieldNode):
                for argument in selection.arguments or ():
                    if argument.name.value in arguments:
                        read.update(_variables_in(argument.value))
            visit(getattr(selection, "selection_set", None))

    visit(definition.selection_set)
    return VariablesRead(frozenset(conditions), frozenset(read))
