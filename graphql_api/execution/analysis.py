"""What an operation costs and how many root fields it runs, worked out once per document.

The query cost (query_cost.py) and the tenant charge's count of writes (tenant_rate.py)
depend only on the document, the operation and the few variables they read: those of
``@skip``/``@include`` and of ``first``. The process keeps them in a bounded LRU keyed by
the document's text and operation name, one figure per combination of those variables'
values (at most ``MAX_VARIANTS``; past that each request computes its own), so a repeated
request computes nothing. MaxCost looks the analysis up and leaves it on the operation's
execution context, where TenantRate reads it (``analysis_of``): nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from graphql import DocumentNode, GraphQLSchema
from strawberry.types import ExecutionContext

from graphql_api.execution.selection import (
    Selections,
    condition_variables,
    fragments_of,
    operations_of,
    variable_values,
)
from graphql_api.limits.bulk_rows import rows_of
from graphql_api.limits.query_cost import query_cost
from graphql_api.lru import Lru

DEFAULT_ENTRIES: Final = 512
MAX_VARIANTS: Final = 16
# The field arguments whose variables the cost reads: a connection's ``first``
# (query_cost.CostCounter.first), a bulk mutation's ``input`` (its rows, bulk_rows.input_rows)
# and ``__type``'s ``name`` (introspection_cost.IntrospectionCost.root; no other field has one).
COST_ARGUMENTS: Final = frozenset({"first", "input", "name"})
# Variable values that can key an entry as they are: JSON's scalars. An ``input`` object keys
# by the one thing the cost reads of it, its row count (bulk_rows.rows_of); any other list or
# object (never valid for a Boolean or an Int) is analysed without the cache.
_KEYABLE: Final = (bool, int, float, str, type(None))
_ABSENT: Final = ("absent", None)


@dataclass(frozen=True, slots=True)
class Analysis:
    cost: int
    # The root fields that run (fragments expanded, @skip/@include applied): a mutation's writes.
    root_fields: int


def root_fields(
    schema: GraphQLSchema, document: DocumentNode, operation_name: str | None, variables: Mapping[str, Any] | None
) -> int:
    """Root fields of the operation that runs, as execution collects them (selection.py).

    ``__typename`` is none: it writes nothing, and caching clients add it everywhere.
    """
    for operation in operations_of(document, operation_name)[:1]:
        selections = Selections(fragments_of(document), variable_values(schema, operation, variables))
        return sum(1 for node, _on in selections.fields([operation.selection_set]) if node.name.value != "__typename")
    return 0


def analyse(
    schema: GraphQLSchema,
    document: DocumentNode,
    variables: Mapping[str, Any] | None,
    operation_name: str | None,
    cost_ceiling: int | None = None,
) -> Analysis:
    """Raises introspection_cost.PastCeiling once the cost is shown past ``cost_ceiling``."""
    return Analysis(
        query_cost(schema, document, variables, operation_name, ceiling=cost_ceiling),
        root_fields(schema, document, operation_name, variables),
    )


@dataclass
class _Entry:
    reads: tuple[str, ...]  # the variables the analysis depends on
    analyses: dict[tuple[Any, ...], Analysis] = field(default_factory=dict)


@dataclass
class AnalysisCache:
    """The process's analyses, shared by every request's MaxCost."""

    max_entries: int = DEFAULT_ENTRIES
    # MAX_QUERY_COST: counting introspection stops once past it (PastCeiling; nothing is cached).
    cost_ceiling: int | None = None
    # How many analyses were computed for want of an entry (tests read it).
    computed: int = 0
    _entries: Lru[tuple[str, str | None], _Entry] = field(init=False)

    def __post_init__(self) -> None:
        self._entries = Lru(self.max_entries)

    def analysis(
        self,
        schema: GraphQLSchema,
        text: str | None,
        document: DocumentNode,
        variables: Mapping[str, Any] | None,
        operation_name: str | None,
    ) -> Analysis:
        """The analysis of ``document`` (whose text is ``text``) run with ``variables``."""
        entry = None
        values: tuple[Any, ...] | None = None
        if text is not None:
            key = (text, operation_name)
            entry = self._entries.get(key)
            if entry is None:
                entry = _Entry(condition_variables(document.definitions, COST_ARGUMENTS))
                self._entries.put(key, entry)
            values = _values(entry.reads, variables or {})
            found = None if values is None else entry.analyses.get(values)
            if found is not None:
                return found
        result = analyse(schema, document, variables, operation_name, self.cost_ceiling)
        self.computed += 1
        if entry is not None and values is not None and len(entry.analyses) < MAX_VARIANTS:
            entry.analyses[values] = result
        return result

    def of_execution(self, execution: ExecutionContext) -> Analysis | None:
        """The analysis of the operation ``execution`` runs, left on it for ``analysis_of``."""
        document = execution.graphql_document
        if document is None:
            return None
        found = self.analysis(
            execution.schema._schema, execution.query, document, execution.variables, execution.operation_name
        )
        # ExecutionContext is a plain dataclass with no field for it (analysis_of reads it).
        setattr(execution, _ANALYSIS_ATTRIBUTE, found)
        return found


def _values(reads: tuple[str, ...], variables: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The key of ``variables``' values for ``reads``, typed (``True`` is not ``1``); None if unkeyable."""
    values: list[Any] = []
    for name in reads:
        if name not in variables:
            values.append(_ABSENT)
            continue
        value = variables[name]
        if isinstance(value, Mapping):
            values.append(("rows", rows_of(value)))
        elif isinstance(value, _KEYABLE):
            values.append((type(value).__name__, value))
        else:
            return None
    return tuple(values)


# One per operation's execution context, so a batch's operations keep their own.
_ANALYSIS_ATTRIBUTE: Final = "hr_analysis"


def analysis_of(execution: ExecutionContext) -> Analysis | None:
    """The analysis MaxCost left on this operation; None if it has not run."""
    found = getattr(execution, _ANALYSIS_ATTRIBUTE, None)
    return found if isinstance(found, Analysis) else None
