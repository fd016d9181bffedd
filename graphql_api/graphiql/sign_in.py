"""Development only: tokens for the demo people and a platform operator, for GraphiQL's "Sign in as".

The route exists only with HR_ENV=development and GraphiQL on (graphiql.routes); elsewhere
``/dev/tokens`` is a plain 404. It mints tokens only for the fixed demo emails of
datastore/dev/demo.py that are in the table, looked up as ``server.py token`` does.
"""

from __future__ import annotations

from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse

from datastore.dev import demo
from datastore.kinds.entities import Employee
from datastore.signin import identities
from datastore.tenancy.scope import SignInScope, TenantScope
from datastore.tenants import employees
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.request.context import Services

OPERATOR_SUBJECT: Final = "demo-operator"

DEMO_EMAILS: Final = (
    demo.ACME_ADMIN,
    *(person[0] for person in demo.ACME_PEOPLE),
    demo.GLOBEX_ADMIN,
    *(person[0] for person in demo.GLOBEX_PEOPLE),
)


class DemoSignIn:
    """``GET /dev/tokens``: ``{"users": [{"label", "email", "token"}]}``, the operator last."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def _demo_employees(self) -> list[Employee]:
        """One identity GetItem and one employee GetItem per demo email."""
        datastore = self.services.datastore
        sign_in = datastore.table(SignInScope())
        found: list[Employee] = []
        for email in DEMO_EMAILS:
            identity = await identities.find_identity(sign_in, email)
            if identity is None:
                continue  # Demo data not loaded into this table.
            employee = await employees.get_employee(datastore.table(TenantScope(identity.org_id)), identity.emp_id)
            if employee is not None:
                found.append(employee)
        return found

    async def tokens(self, _request: Request) -> JSONResponse:
        people = await self._demo_employees()
        settings = self.services.settings
        users: list[dict[str, str | None]] = [
            {
                "label": f"{person.first_name} {person.last_name} ({person.role.value}, {person.email})",
                "email": person.email,
                "token": issue_token(settings, subject=person.emp_id, org_id=person.org_id, role=person.role.value),
            }
            for person in people
        ]
        users.append(
            {
                "label": "Platform operator",
                "email": None,
                "token": issue_token(settings, subject=OPERATOR_SUBJECT, org_id=None, role=PLATFORM_ROLE),
            }
        )
        return JSONResponse({"users": users}, headers={"Cache-Control": "no-store"})
