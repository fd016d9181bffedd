"""The documents clients run, each analysed once: one cache for the process.

Keyed by the document's text (a bounded LRU, least recently used out). An entry is made when
a text first parses and validates; validation depends on the schema and the rule set (the
document limits and, in production, no introspection), both fixed for a process, so a text
that validated once validates again and is neither parsed nor validated again. Documents
that fail are not kept: the cache holds only what clients really run, and a client cannot
fill it with refusals. (Strawberry's ParserCache and ValidationCache do not fit: our limit
rules are classes made per request, so a ValidationCache keyed by the rule classes would
never hit.)

Each operation of a document (``OperationAnalyses``) works out, on first use, and keeps per
values of the variables it depends on (at most ``MAX_VARIANTS`` each; past that each request
works out its own):

- its cost and count of root fields (execution/analysis.py), per values of the variables of
  ``@skip``/``@include`` and of the arguments the cost reads, as sent;
- its compiled plan (execution/plan/), per coerced values of the ``@skip``/``@include``
  variables; None where plans do not cover the operation, so it is not compiled again;
- the relations each connection field loads on its page's nodes (schema/types/relations.py),
  per field, node type and values of the operation's ``@skip``/``@include`` variables;
- the members marked ``@deprecated`` it selects (execution/deprecations.py), once: what the
  server counts per organisation and operation (observability/metrics.py).

The variables each figure depends on are read in one walk of the document, when its entry is
made. The counters are what tests and benches read (``app.state.documents``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLSchema,
    OperationDefinitionNode,
)
from graphql.execution import Executor

from graphql_api.execution.analysis import COST_ARGUMENTS, Analysis, analyse, cost_key
from graphql_api.execution.deprecations import deprecated_selections
from graphql_api.execution.plan.compiler import CompiledPlan, Unsupported, compile_operation
from graphql_api.execution.selection import VariablesRead, fragments_of, variables_read
from graphql_api.lru import Lru

DEFAULT_ENTRIES: Final = 512
MAX_VARIANTS: Final = 16

T = TypeVar("T")


@dataclass
class Documents:
    """The process's documents, shared by every request."""

    max_entries: int = DEFAULT_ENTRIES
    # Documents parsed and validated for want of an entry.
    parses: int = 0
    # Costs (and counts of root fields), plans and relation plans worked out for want of one kept.
    costs_computed: int = 0
    plans_compiled: int = 0
    relation_plans_built: int = 0
    # Queries run by a plan, and queries left to graphql-core (execution/plan/extension.py).
    planned_runs: int = 0
    fallbacks: int = 0
    _entries: Lru[str, Document] = field(init=False)

    def __post_init__(self) -> None:
        self._entries = Lru(self.max_entries)

    def get(self, text: str) -> Document | None:
        return self._entries.get(text)

    def add(self, text: str, node: DocumentNode) -> Document:
        """The entry of ``text``, parsed and validated as ``node``."""
        document = Document(self, node)
        self._entries.put(text, document)
        return document


class Document:
    """One validated document and the analyses of its operations."""

    def __init__(self, documents: Documents, node: DocumentNode) -> None:
        self.documents = documents
        self.node = node
        self.fragments = fragments_of(node)
        definitions = [d for d in node.definitions if isinstance(d, OperationDefinitionNode | FragmentDefinitionNode)]
        self._reads: dict[int, VariablesRead] = {id(d): variables_read(d, COST_ARGUMENTS) for d in definitions}
        reads = self._reads.values()
        # The @skip/@include variables anywhere in the document, and with the cost's arguments'.
        self.conditions = _sorted(read.conditions for read in reads)
        self.cost_reads = _sorted([*(read.conditions for read in reads), *(read.arguments for read in reads)])
        # One entry per operation the document has, made on first use: a name the document does
        # not have gets none (whatever names clients send, an entry stays this size).
        self._operations: dict[str | None, OperationAnalyses | None] = {
            d.name.value if d.name else None: None for d in definitions if isinstance(d, OperationDefinitionNode)
        }

    def operation(self, name: str | None) -> OperationAnalyses | None:
        """The analyses of the operation named ``name`` (None: an anonymous one); None when the
        document has no such operation."""
        if name not in self._operations:
            return None
        found = self._operations[name]
        if found is None:
            found = self._operations[name] = OperationAnalyses(self, name)
        return found

    def conditions_of(self, operation: OperationDefinitionNode) -> tuple[str, ...]:
        """The @skip/@include variables of ``operation`` and of the document's fragments."""
        definitions = [operation, *self.fragments.values()]
        return _sorted(self._reads[id(d)].conditions for d in definitions if id(d) in self._reads)


class OperationAnalyses:
    """What one operation of a document costs, its plan and its relation plans, each kept."""

    def __init__(self, document: Document, name: str | None) -> None:
        self.document = document
        self.name = name
        self._costs: dict[tuple[Any, ...], Analysis] = {}
        self._plans: dict[tuple[Any, ...], CompiledPlan | None] = {}
        self._relation_conditions: tuple[str, ...] | None = None
        self._relation_plans: dict[int, dict[tuple[Any, ...], Any]] = {}
        self._deprecated: tuple[str, ...] | None = None

    def deprecated(self, schema: GraphQLSchema) -> tuple[str, ...]:
        """The deprecated members the operation selects (with its fragments), worked out once."""
        found = self._deprecated
        if found is None:
            found = self._deprecated = deprecated_selections(schema, self.document.node, self.name)
        return found

    def analysis(self, schema: GraphQLSchema, variables: Mapping[str, Any] | None, ceiling: int | None) -> Analysis:
        """The cost and root fields run with ``variables`` (as sent). Raises
        introspection_cost.PastCeiling, and keeps nothing, once the cost is past ``ceiling``."""
        document = self.document
        values = cost_key(document.cost_reads, variables or {})
        found = None if values is None else self._costs.get(values)
        if found is not None:
            return found
        result = analyse(schema, document.node, variables, self.name, ceiling)
        document.documents.costs_computed += 1
        if values is not None and len(self._costs) < MAX_VARIANTS:
            self._costs[values] = result
        return result

    def plan(self, schema: GraphQLSchema, executor: Executor[Any]) -> CompiledPlan | None:
        """The plan of the operation ``executor`` runs with its variables; None for graphql-core."""
        document = self.document
        coerced = executor.variable_values.coerced
        values = tuple(coerced.get(name) for name in document.conditions)
        if values in self._plans:
            return self._plans[values]
        try:
            plan: CompiledPlan | None = compile_operation(
                schema, executor.operation, document.fragments, executor.variable_values
            )
            document.documents.plans_compiled += 1
        except Unsupported:
            plan = None
        if len(self._plans) < MAX_VARIANTS:
            self._plans[values] = plan
        return plan

    def relation_plan(
        self,
        node: FieldNode,
        operation: OperationDefinitionNode,
        target: type[Any],
        variables: Mapping[str, Any],
        build: Callable[[], T],
    ) -> T:
        """What ``build`` gives for the connection field ``node`` (of ``operation``) over nodes of
        ``target``, kept per field, target and @skip/@include values."""
        conditions = self._relation_conditions
        if conditions is None:
            conditions = self._relation_conditions = self.document.conditions_of(operation)
        key = (target, *(variables.get(name) for name in conditions))
        plans = self._relation_plans.setdefault(id(node), {})
        found = plans.get(key)
        if found is None:
            found = build()
            self.document.documents.relation_plans_built += 1
            if len(plans) < MAX_VARIANTS:
                plans[key] = found
        result: T = found
        return result


def _sorted(groups: Any) -> tuple[str, ...]:
    return tuple(sorted(set().union(*groups)))


__all__ = ["Document", "Documents", "OperationAnalyses"]
