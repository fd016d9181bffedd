"""Subscriptions at the schema's edge: where they are served, and a refusal that must stop one.

A subscription is served over WebSocket (graphql-transport-ws, graphql_api/subscriptions/
websocket.py) and over HTTP when the client asks for a stream (``Accept: text/event-stream``,
``multipart/mixed`` or Apollo's ``multipart/mixed;subscriptionSpec=1.0``,
graphql_api/subscriptions/over_http.py), both with a live session
(graphql_api/subscriptions/session.py). A plain JSON request (POST or GET) cannot carry one:
SubscriptionsNotServed refuses it before validation with its own code,
SUBSCRIPTIONS_NOT_SUPPORTED, a request error (no ``data``; HTTP 400 under
application/graphql-response+json, 200 under application/json, as the GraphQL-over-HTTP
draft and its reference server answer it), rather than running nothing or graphql-core's
"The subscription operation is not supported by the schema."

RefusedBeforeRunning: an extension that refuses an operation in ``on_execute`` (the caller's
active check, the tenant rate limit) sets its result, which for a query or mutation means
nothing runs; Strawberry's subscription path does not look at that result and would subscribe
anyway. Listed after every such extension, this one raises the refusal instead, which ends
the subscription before it starts; the schema's ``stream`` (graphql_api/schema/executable.py)
hands the refusal's own errors on.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError
from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from graphql_api.http.errors import TransportCode
from graphql_api.subscriptions.session import LiveSession

MESSAGE = (
    "subscriptions are not served as plain JSON: subscribe over the WebSocket at /graphql "
    "(graphql-transport-ws), or ask for a stream with Accept: text/event-stream, multipart/mixed "
    "or multipart/mixed;subscriptionSpec=1.0"
)


class SubscriptionsNotServed(SchemaExtension):
    def on_validate(self) -> Iterator[None]:
        # Before validation, like OperationNameRequired: errors set here refuse the request.
        execution = self.execution_context
        streaming = isinstance(getattr(execution.context, "session", None), LiveSession)
        if (
            not execution.pre_execution_errors
            and execution.operation_type is OperationType.SUBSCRIPTION
            and not streaming
        ):
            execution.pre_execution_errors = [
                GraphQLError(MESSAGE, extensions={"code": TransportCode.SUBSCRIPTIONS_NOT_SUPPORTED.value})
            ]
        yield


class RefusedBeforeRunning(Exception):
    """An extension refused the subscription; ``result`` is its refusal."""

    def __init__(self, result: GraphQLExecutionResult) -> None:
        super().__init__("refused before running")
        self.result = result


class RefuseRefusedSubscriptions(SchemaExtension):
    def on_execute(self) -> Iterator[None]:
        execution = self.execution_context
        result = execution.result
        if execution.operation_type is OperationType.SUBSCRIPTION and isinstance(result, GraphQLExecutionResult):
            raise RefusedBeforeRunning(result)
        yield
