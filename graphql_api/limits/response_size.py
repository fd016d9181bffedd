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
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from graphql_api.errors import ApiError, Code


@dataclass
class ResponseBudget:
    limit: int
    used: int = 0
    exceeded: bool = False

    def charge(self, items: Sequence[Any]) -> None:
        """Charge a page of items about to be returned; raise once past the limit."""
        if not self.exceeded and items:
            self.used += len(orjson.dumps(items, default=str))
            self.exceeded = self.used > self.limit
        if self.exceeded:
            raise self.error()

    def error(self) -> ApiError:
        return ApiError(
            Code.BAD_USER_INPUT,
            f"the response would be larger than {self.limit} bytes; ask for fewer objects with `first`",
            limit="responseBytes",
            maxBytes=self.limit,
        )


class ResponseSizeGuard(SchemaExtension):
    """A query whose response went past the cap answers only the one error, no partial data."""

    def on_execute(self) -> Iterator[None]:
        yield
        context = self.execution_context
        session = getattr(context.context, "session", None)
        budget = None if session is None else session.response_budget
        result = context.result
        if (
            isinstance(budget, ResponseBudget)
            and budget.exceeded
            and result is not None
            and context.operation_type is OperationType.QUERY
            and hasattr(result, "errors")
        ):
            error = budget.error()
            result.data = None
            result.errors = [GraphQLError(str(error), extensions=error.extensions)]
