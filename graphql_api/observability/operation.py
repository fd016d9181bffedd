"""The GraphQL layer's part of the request record: operation, tenant, calls, error codes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from strawberry.exceptions import MissingQueryError
from strawberry.extensions import SchemaExtension
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError

from graphql_api.execution.errors import Code, translate
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.operation import operation_of
from graphql_api.observability.record import record_of
from graphql_api.observability.tracing import span

# What Strawberry raises when a request names no runnable operation: the transport answers
# each as a TransportError (graphql_api/http/transport.py), so they are not counted here.
OPERATION_REFUSALS: Final = (InvalidOperationTypeError, CannotGetOperationTypeError, MissingQueryError)


class RecordOperation(SchemaExtension):
    """Fills the request's record (observability/record.py) once per executed operation.

    Listed before ErrorCodes (graphql_api/execution/errors.py), so it leaves the operation after it and
    reads the codes clients see, bugs already masked as INTERNAL.
    """

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context.context
        request = getattr(context, "request", None)
        record = record_of(request.scope) if request is not None else None
        if record is None:
            yield
            return
        record.add_call_log(context.session.call_log)
        with span("GraphQL operation", "internal") as current:
            try:
                yield
            except OPERATION_REFUSALS:
                raise  # the transport answers and counts it with its own code
            except Exception as escaped:
                # It escaped a hook; the client gets its code, INTERNAL for a bug (schema.ApiSchema).
                expected = translate(escaped)
                record.error_codes[expected.code.value if expected is not None else Code.INTERNAL.value] += 1
                raise
            else:
                result = self.execution_context.result
                errors = (result.errors or []) if result is not None else []
                for error in errors:
                    code = (error.extensions or {}).get("code")
                    record.error_codes[str(code) if code is not None else Code.INTERNAL.value] += 1
                # It ran unless it was refused before execution (no data, no error with a path).
                ran = result is not None and (result.data is not None or any(e.path for e in errors))
                name = self.execution_context.operation_name
                if ran and name is not None:
                    record.ran.append(name)
                run = operation_of(self.execution_context)
                if ran and run is not None and run.analyses is not None:
                    # Worked out once per document's operation (execution/documents.py).
                    selected = run.analyses.deprecated(graphql_schema(self.execution_context.schema))
                    record.deprecated.extend((name, member) for member in selected)
            finally:
                name = self.execution_context.operation_name
                record.operations.append(name)
                principal = getattr(context, "principal", None)
                if principal is not None:
                    record.tenant = principal.org_id
                if current is not None:
                    current.update_name(f"GraphQL {name or 'anonymous'}")
