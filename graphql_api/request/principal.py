"""Who is calling, as a request carries it.

The authentication backend (graphql_api/auth/backend.py) verifies the caller's credential and
puts a ``PrincipalUser`` on the connection; everything after it reads the caller with
``principal_of``. The request's context and session hold the ``Principal`` they serve, so it is
defined here, below authentication, which makes and checks it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.authentication import BaseUser
from starlette.requests import HTTPConnection

from datastore.kinds.entities import Role
from datastore.values.ids import EmployeeId, OrgId, SessionId


@dataclass(frozen=True, slots=True)
class Principal:
    """A verified caller: an employee of one organisation, an API key of one, or a platform operator.

    For an API key (``api_key``) the subject is the key's id: no employee stands behind it.
    ``session_id`` is the session a token from ``POST /auth/token`` was issued in (its
    ``sid`` claim), which ``signOut`` ends; None for other tokens.
    """

    subject: str
    org_id: OrgId | None
    role: Role | None
    api_key: bool = False
    session_id: SessionId | None = None
    # When the credential stops being valid (its ``exp``, epoch seconds); None for an API key.
    # A live subscription's connection ends then (graphql_api/subscriptions/connection.py).
    expires_at: float | None = field(default=None, compare=False)

    @property
    def is_platform(self) -> bool:
        return self.org_id is None

    @property
    def employee_id(self) -> EmployeeId | None:
        """The employee the caller is (its subject, a ULID since the token was read); None for
        an API key or a platform operator."""
        return None if self.api_key or self.org_id is None else EmployeeId(self.subject)


class PrincipalUser(BaseUser):
    """The verified caller, as Starlette's ``request.user``."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.principal.subject

    @property
    def identity(self) -> str:
        return self.principal.subject


def principal_of(conn: HTTPConnection) -> Principal | None:
    """The caller the backend verified; None for an anonymous request."""
    user = conn.scope.get("user")
    return user.principal if isinstance(user, PrincipalUser) else None
