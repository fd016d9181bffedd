"""One operation of a request as it runs: its record, and the extension that finds its document.

The transport gives each operation (a batch has several) a context of its own carrying an
``OperationRun`` (request/context.py ``RequestContext.operation``): the name the client sent,
and what was found of it as it went: its document's analyses (execution/documents.py), found
by ``CachedDocuments`` once the document has parsed and validated, its cost, worked out by
MaxCost (limits/max_cost.py), and what TenantRate charged for it (limits/tenant_rate.py),
which ``extensions.cost`` shows (execution/cost.py). The schema's extensions and resolvers
read it there, handed down with the context.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext

from graphql_api.execution.analysis import Analysis
from graphql_api.execution.charge import Charge
from graphql_api.execution.documents import Document, Documents, OperationAnalyses


@dataclass(slots=True)
class OperationRun:
    # The ``operationName`` the client sent; None when it sent none (Strawberry's own
    # ``operation_name`` falls back to the first operation's).
    sent_name: str | None = None
    # Its document's analyses of this operation, once the document has validated.
    analyses: OperationAnalyses | None = None
    # What it costs, once MaxCost has admitted it.
    analysis: Analysis | None = None
    # What TenantRate charged for it, and the organisation's bucket after it.
    charge: Charge | None = None


def operation_of(execution: ExecutionContext) -> OperationRun | None:
    """The operation's own record, on its context; None for a context without one."""
    context: Any = execution.context
    found = getattr(context, "operation", None)
    return found if isinstance(found, OperationRun) else None


class CachedDocuments(SchemaExtension):
    """A known document is neither parsed nor validated again; a new one is kept once it has
    validated; either way the operation's record gets the document's analyses of it."""

    def __init__(self, documents: Documents) -> None:
        super().__init__()
        self.documents = documents
        self.found: Document | None = None

    def on_parse(self) -> Iterator[None]:
        execution = self.execution_context
        found = None if execution.query is None else self.documents.get(execution.query)
        if found is not None:
            self.found = found
            execution.graphql_document = found.node  # Strawberry parses only when this is None
        else:
            self.documents.parses += 1
        yield

    def on_validate(self) -> Iterator[None]:
        execution = self.execution_context
        if self.found is not None:
            execution.pre_execution_errors = []  # validated when it was kept: skip it
        yield
        if execution.pre_execution_errors != [] or execution.query is None:
            return  # refused: nothing kept, nothing runs
        document = self.found
        if document is None:
            node = execution.graphql_document
            if node is None:
                return
            document = self.documents.add(execution.query, node)
        run = operation_of(execution)
        if run is not None:
            run.analyses = document.operation(execution.operation_name)
