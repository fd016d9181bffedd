"""What one GraphQL request carries: plain data about the request, and its session.

Everything that acts (loaders, the I/O runner, the deadline, the call budget) lives in the
request's ``RequestSession`` (graphql_api/request/session.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from graphql_api.auth.tokens import Principal
from graphql_api.request.services import Services
from graphql_api.request.session import RequestSession

__all__ = ["DocumentRegistration", "RequestContext", "Services"]


@dataclass(frozen=True, slots=True)
class DocumentRegistration:
    """An Apollo persisted query to store for the caller's organisation once its operation has
    run (graphql_api/http/persisted.py): the tenant charge and the active check count it as a
    write (limits/tenant_rate.py, active.py)."""

    sha256: str
    text: str


@dataclass(frozen=True, slots=True)
class RequestContext:
    request: Request
    response: Response
    request_id: str
    principal: Principal | None
    session: RequestSession
    # Set on one operation's copy of the context (a batch's operations share the rest).
    registration: DocumentRegistration | None = None
