"""Maximum response size, MAX_RESPONSE_BYTES, enforced while the result is built.

The cost limit bounds how many objects a query may ask for; this bounds the bytes the
objects it does get can come to (long names and descriptions are what the cost limit
cannot see). Each list page is charged as the connection builder receives it, before any
of its objects is resolved: the page's items serialised with orjson, which is the size of
every field they hold, close to what the response will carry for them (an estimate: a
query that selects fewer fields is charged as if it selected them all). The first page
that takes the request past the cap fails with BAD_USER_INPUT (``limit: responseBytes``),
and so does every later one, so no more pages are built or loaded beneath it; a query then
answers that one error and no data. A mutation keeps its data: its write has committed,
and the client must learn it did.

Objects a page points to (``manager``, ``department``, loaded beside it) are not charged: the
cost limit already holds them to one per object of the page above.

Introspection builds no pages: what ``__schema`` and ``__type`` answered is charged whole
once the operation has run, serialised as the response will carry it, and a query whose
total is then past the cap answers the one error instead (the cost limit has already held
the work to what MAX_QUERY_COST admits; this holds the bytes, long descriptions included).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    SelectionSetNode,
)
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from graphql_api.execution.errors import ApiError, Code
from graphql_api.execution.introspection_cost import ROOT_FIELDS
from graphql_api.execution.selection import fragments_of, operations_of


@dataclass
class ResponseBudget:
    limit: int
    used: int = 0
    exceeded: bool = False

    def charge(self, items: Sequence[Any]) -> None:
        """Charge a page of items about to be returned; raise once past the limit."""
        if not self.exceeded and items:
            self.add(len(orjson.dumps(items, default=str)))
        if self.exceeded:
            raise self.error()

    def add(self, size: int) -> None:
        """Charge ``size`` bytes already built (introspection's answers)."""
        self.used += size
        self.exceeded = self.exceeded or self.used > self.limit

    def error(self) -> ApiError:
        return ApiError(
            Code.BAD_USER_INPUT,
            f"the response would be larger than {self.limit} bytes; ask for fewer objects with `first`",
            limit="responseBytes",
            maxBytes=self.limit,
        )


def introspection_keys(document: DocumentNode | None, operation_name: str | None) -> set[str]:
    """Response keys of the operation's ``__schema`` and ``__type`` fields, fragments expanded,
    under any ``@skip``/``@include`` (a key that did not run is simply absent from the data)."""
    if document is None:
        return set()
    fragments = fragments_of(document)
    keys: set[str] = set()
    visited: set[str] = set()
    # A stack rather than a nested function calling itself: such a function is a reference
    # cycle (it holds its own cell), which every request would leave to the cyclic collector.
    stack: list[SelectionSetNode | None] = [op.selection_set for op in operations_of(document, operation_name)[:1]]
    while stack:
        selection_set = stack.pop()
        for selection in () if selection_set is None else selection_set.selections:
            if isinstance(selection, FieldNode):
                if selection.name.value in ROOT_FIELDS:
                    keys.add(selection.alias.value if selection.alias else selection.name.value)
            elif isinstance(selection, InlineFragmentNode):
                stack.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in visited:
                visited.add(selection.name.value)
                fragment = fragments.get(selection.name.value)
                stack.append(None if fragment is None else fragment.selection_set)
    return keys


class ResponseSizeGuard(SchemaExtension):
    """A query whose response went past the cap answers only the one error, no partial data."""

    def on_execute(self) -> Iterator[None]:
        yield
        context = self.execution_context
        session = getattr(context.context, "session", None)
        budget = None if session is None else session.response_budget
        result = context.result
        if (
            not isinstance(budget, ResponseBudget)
            or result is None
            or context.operation_type is not OperationType.QUERY
            or not hasattr(result, "errors")
        ):
            return
        data = result.data
        if isinstance(data, dict) and not budget.exceeded:
            for key in introspection_keys(context.graphql_document, context.operation_name):
                if key in data:
                    budget.add(len(orjson.dumps(data[key])))
        if budget.exceeded:
            error = budget.error()
            result.data = None
            result.errors = [GraphQLError(str(error), extensions=error.extensions)]
