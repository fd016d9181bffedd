"""The process's plans, bounded, keyed by document text and operation name.

One entry per (document, operation) holds the variables its @skip/@include read and a plan
per combination of their values (at most ``MAX_VARIANTS``; more run on graphql-core). An
operation a plan cannot cover is remembered as None, so it is not compiled again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from graphql import DocumentNode, GraphQLSchema
from graphql.execution.executor import Executor

from graphql_api.execution.plan.compiler import Plan, Unsupported, compile_operation
from graphql_api.execution.selection import condition_variables, fragments_of
from graphql_api.lru import Lru

DEFAULT_ENTRIES: Final = 512
MAX_VARIANTS: Final = 16


@dataclass
class _Entry:
    conditions: tuple[str, ...]
    plans: dict[tuple[Any, ...], Plan | None] = field(default_factory=dict)


@dataclass
class PlanCache:
    max_entries: int = DEFAULT_ENTRIES
    # Counters the tests read: plans compiled, operations run by a plan, and run by graphql-core.
    compiled: int = 0
    planned_runs: int = 0
    fallbacks: int = 0
    _entries: Lru[tuple[str, str | None], _Entry] = field(init=False)

    def __post_init__(self) -> None:
        self._entries = Lru(self.max_entries)

    def plan_for(
        self, schema: GraphQLSchema, text: str, document: DocumentNode, executor: Executor[Any]
    ) -> Plan | None:
        """The plan of ``executor``'s operation of ``document`` (``text``), or None for graphql-core."""
        key = (text, executor.operation.name.value if executor.operation.name else None)
        entry = self._entries.get(key)
        if entry is None:
            entry = _Entry(condition_variables(document.definitions))
            self._entries.put(key, entry)
        coerced = executor.variable_values.coerced
        values = tuple(coerced.get(name) for name in entry.conditions)
        if values in entry.plans:
            return entry.plans[values]
        try:
            fragments = fragments_of(document)
            plan: Plan | None = compile_operation(schema, executor.operation, fragments, executor.variable_values)
            self.compiled += 1
        except Unsupported:
            plan = None
        if len(entry.plans) < MAX_VARIANTS:
            entry.plans[values] = plan
        return plan
