"""What an operation costs and how many root fields it runs.

The query cost (execution/query_cost.py) and the tenant charge's count of writes
(limits/tenant_rate.py) depend only on the document, the operation and the few variables
they read: those of ``@skip``/``@include`` and of the arguments in ``COST_ARGUMENTS``. The
process keeps one figure per document, operation and values of those variables (``cost_key``)
with the document's other analyses (execution/documents.py), so a repeated request computes
nothing. MaxCost leaves the figure on the operation's record, where TenantRate reads it:
nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from graphql import DocumentNode, GraphQLSchema

from graphql_api.execution.query_cost import query_cost
from graphql_api.execution.rows import rows_of
from graphql_api.execution.selection import Selections, fragments_of, operations_of, variable_values

# The field arguments whose variables the cost reads: a connection's ``first``
# (query_cost.CostCounter.first), a bulk mutation's ``input`` (its rows, rows.input_rows)
# and ``__type``'s ``name`` (introspection_cost.IntrospectionCost.root; no other field has one).
COST_ARGUMENTS: Final = frozenset({"first", "input", "name"})
# Variable values that can key an entry as they are: JSON's scalars. An ``input`` object keys
# by the one thing the cost reads of it, its row count (rows.rows_of); any other list or
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


def cost_key(reads: tuple[str, ...], variables: Mapping[str, Any]) -> tuple[Any, ...] | None:
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
