"""What one GraphQL request carries: plain data about the request, and its session.

Everything that acts (loaders, the I/O runner, the deadline, the call budget) lives in the
request's ``RequestSession`` (graphql_api/request/session.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from graphql_api.execution.loaders import Loaders
from graphql_api.execution.operation import OperationRun
from graphql_api.request.principal import Principal
from graphql_api.request.services import Services
from graphql_api.request.session import RequestSession

__all__ = ["DocumentRegistration", "OperationRun", "RequestContext", "Services"]


@dataclass(frozen=True, slots=True)
class DocumentRegistration:
    """An Apollo persisted query to store for the caller's organisation once its operation has
    run (graphql_api/http/persisted.py): the tenant charge and the active check count it as a
    write (limits/tenant_rate.py, active.py)."""

    sha256: str
    text: str


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Made with the request's session by its lifetime (request/lifetime.py), and copied for
    each of its operations by the transport (``for_operation``)."""

    # The HTTP request, or the WebSocket a subscription came on (graphql_api/subscriptions/).
    request: HTTPConnection
    response: Response
    request_id: str
    principal: Principal | None
    session: RequestSession
    # One operation's own (a batch's operations share the rest).
    operation: OperationRun = field(default_factory=OperationRun)
    registration: DocumentRegistration | None = None

    @property
    def loaders(self) -> Loaders:
        """The request's loaders, one hop from a resolver's ``info.context``: made by the session on
        first use (UNAUTHENTICATED without a token), a subscription's renewed for each event
        (graphql_api/subscriptions/session.py)."""
        return self.session.loaders

    @property
    def http(self) -> Request:
        """The HTTP request; a subscription's context over a WebSocket has none."""
        assert isinstance(self.request, Request), "not an HTTP request"
        return self.request

    def for_operation(self, sent_name: str | None, registration: DocumentRegistration | None) -> RequestContext:
        """The context of one operation of the request, named ``sent_name`` by the client."""
        return dataclasses.replace(self, operation=OperationRun(sent_name), registration=registration)
