"""One GraphQL-over-HTTP exchange: read the request, resolve its document, run it, answer.

Every failure before GraphQL runs is a TransportError, answered as a JSON GraphQL error with
``extensions.code`` and its status (never plain text, never a 5xx); a mutation over GET is
405 with ``Allow: POST``; a document with several operations and no ``operationName`` is a
400 and nothing runs. A query or mutation asked for as a stream (Server-Sent Events,
multipart) is answered as its one result in that stream (graphql_api/http/streams.py); a
subscription asked for so never reaches here (graphql_api/subscriptions/over_http.py). A
subscription passes the method check, whatever the method, so that the schema refuses it
with its own code (graphql_api/subscriptions/edge.py).
"""

from __future__ import annotations

import asyncio

import strawberry
from starlette.requests import Request
from starlette.responses import Response
from strawberry.exceptions import MissingQueryError
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from graphql_api.http import response, streams
from graphql_api.http.errors import TransportCode, TransportError, bad_request
from graphql_api.http.persisted import PersistedDocuments
from graphql_api.http.request import Operation, read_operations
from graphql_api.observability.record import record_error
from graphql_api.request.context import RequestContext

_GET_OPERATIONS = frozenset({OperationType.QUERY, OperationType.SUBSCRIPTION})
_POST_OPERATIONS = frozenset({OperationType.QUERY, OperationType.MUTATION, OperationType.SUBSCRIPTION})


class HttpTransport:
    def __init__(self, schema: strawberry.Schema, persisted: PersistedDocuments, batch_max_operations: int) -> None:
        self.schema = schema
        self.persisted = persisted
        self.batch_max_operations = batch_max_operations

    async def handle(self, context: RequestContext) -> Response:
        """The answer to the request of ``context`` (its lifetime made the context and its session)."""
        request = context.http
        media_type = response.JSON
        try:
            media_type = response.negotiate(request.headers.get("accept"))
            operations = await read_operations(request, self.batch_max_operations)
            if isinstance(operations, list):
                if response.streamed(media_type):
                    raise bad_request("a batch is answered as JSON: send one operation per streamed request")
                results = list(await asyncio.gather(*(self._run(request, op, context) for op in operations)))
                answer = response.results_response(media_type, results, batch=True)
            elif response.streamed(media_type):
                answer = streams.single_response(media_type, await self._run(request, operations, context))
            else:
                answer = response.results_response(
                    media_type, [await self._run(request, operations, context)], batch=False
                )
        except TransportError as error:
            record_error(request.scope, error.code.value)
            # Refused before anything ran: the stream never starts, so a stream's refusal is JSON.
            answer = response.error_response(error, response.JSON if response.streamed(media_type) else media_type)
        else:
            # Headers resolvers set on the context's response (its own Content-Length aside).
            for name, value in context.response.headers.items():
                if name != "content-length":
                    answer.headers[name] = value
        if "authorization" in request.headers:
            # A response to a caller with credentials is theirs alone: no shared cache keeps it.
            answer.headers["Cache-Control"] = "no-store"
        answer.headers["Vary"] = "Accept, Authorization"
        return answer

    async def _run(self, request: Request, operation: Operation, context: RequestContext) -> ExecutionResult:
        resolved = await self.persisted.resolve(operation, context)
        if resolved.query is None:
            raise bad_request("the request has no GraphQL query")
        # This operation's own context: its name as sent, and the document to store once it has
        # run (persisted.py).
        context = context.for_operation(operation.operation_name, resolved.register)
        allowed = _GET_OPERATIONS if request.method == "GET" else _POST_OPERATIONS
        try:
            result = await self.schema.execute(
                resolved.query,
                variable_values=operation.variables,
                context_value=context,
                operation_name=operation.operation_name,
                allowed_operation_types=allowed,
                operation_extensions=operation.extensions,
            )
        except InvalidOperationTypeError:
            raise TransportError(
                405,
                TransportCode.METHOD_NOT_ALLOWED,
                "mutations are not allowed when using GET; send them with POST",
                headers={"Allow": "POST"},
            ) from None
        except CannotGetOperationTypeError:
            raise bad_request(
                "the document has several operations (or none by that name): name one with operationName"
            ) from None
        except MissingQueryError:
            raise bad_request("the request has no GraphQL query") from None
        return result
