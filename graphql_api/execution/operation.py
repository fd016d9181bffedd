"""One operation of a request as it runs: what the client sent for it, and what was found of it.

The transport gives each operation (a batch has several) a context of its own carrying one of
these (request/context.py ``RequestContext.operation``); the schema's extensions and resolvers
read it there, handed down with the context rather than hung on Strawberry's objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strawberry.types import ExecutionContext


@dataclass(slots=True)
class OperationRun:
    # The ``operationName`` the client sent; None when it sent none (Strawberry's own
    # ``operation_name`` falls back to the first operation's).
    sent_name: str | None = None


def operation_of(execution: ExecutionContext) -> OperationRun | None:
    """The operation's own record, on its context; None for a context without one."""
    context: Any = execution.context
    found = getattr(context, "operation", None)
    return found if isinstance(found, OperationRun) else None
