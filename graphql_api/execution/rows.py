"""How many rows a bulk field's ``input`` holds (``importEmployees``' ``input.rows``).

Counted in the document (a literal, or variables) before anything runs: the query cost
multiplies a bulk field by it (query_cost.py), the analyses key a cost by it (analysis.py),
and the bulk limit refuses past MAX_ROWS (graphql_api/limits/bulk_rows.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphql import FieldNode, ListValueNode, ObjectValueNode, VariableNode


def rows_of(value: Any) -> int | None:
    """How many rows an ``input`` variable holds; None for an input without ``rows``."""
    return _count(value.get("rows") if isinstance(value, Mapping) else None)


def _count(rows: Any) -> int | None:
    if rows is None:
        return None
    # A single row may be sent without the list (GraphQL's input coercion makes it one).
    return len(rows) if isinstance(rows, list | tuple) else 1


def input_rows(node: FieldNode, variables: Mapping[str, Any]) -> int | None:
    """The length of the field's ``input.rows`` (literal or variables); None for a field without it."""
    for argument in node.arguments or ():
        if argument.name.value != "input":
            continue
        value: Any = argument.value
        if isinstance(value, VariableNode):
            return rows_of(variables.get(value.name.value))
        rows: Any = None
        if isinstance(value, ObjectValueNode):
            field = next((f for f in value.fields if f.name.value == "rows"), None)
            rows = None if field is None else field.value
            if isinstance(rows, VariableNode):
                rows = variables.get(rows.name.value)
            elif isinstance(rows, ListValueNode):
                rows = rows.values
        return _count(rows)
    return None
