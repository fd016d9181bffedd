"""Subscriptions are not served (yet): a subscription is a request error with its own code.

The schema has no Subscription root and neither transport streams (GraphQL over HTTP here;
no WebSocket route). Without this check a subscription sent with POST met the transport's
method check and was answered as a mutation sent with GET would be. Refusing it before
validation, whatever the method, says what is wrong: SUBSCRIPTIONS_NOT_SUPPORTED, a request
error (no ``data``; HTTP 400 under application/graphql-response+json, 200 under
application/json, as the GraphQL-over-HTTP draft and its reference server answer it), rather
than graphql-core's "The subscription operation is not supported by the schema."
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from graphql_api.http.errors import TransportCode

MESSAGE = "subscriptions are not served over HTTP (GET or POST); this API has no subscription operations yet"


class SubscriptionsNotServed(SchemaExtension):
    def on_validate(self) -> Iterator[None]:
        # Before validation, like OperationNameRequired: errors set here refuse the request.
        execution = self.execution_context
        if not execution.pre_execution_errors and execution.operation_type is OperationType.SUBSCRIPTION:
            execution.pre_execution_errors = [
                GraphQLError(MESSAGE, extensions={"code": TransportCode.SUBSCRIPTIONS_NOT_SUPPORTED.value})
            ]
        yield
