"""What one GraphQL request carries: plain data about the request, and its session.

Everything that acts (loaders, the I/O runner, the deadline, the call budget) lives in the
request's ``RequestSession`` (graphql_api/session.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from graphql_api.auth import Principal
from graphql_api.services import Services
from graphql_api.session import RequestSession

__all__ = ["RequestContext", "Services"]


@dataclass(frozen=True, slots=True)
class RequestContext:
    request: Request
    response: Response
    request_id: str
    principal: Principal | None
    session: RequestSession
