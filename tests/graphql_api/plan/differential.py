"""Two live copies of the app on one table, one with compiled plans and one on graphql-core alone.

``Differential.compare`` sends one request to both, as the same caller, and returns both
answers normalised: the cost extension (timings) is dropped, request ids (in INTERNAL
errors) are blanked, and errors are sorted by path and message, since graphql-core lists
them in the order asynchronous resolvers happen to finish.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
from starlette.applications import Starlette

from datastore.entities import Employee
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth import issue_token
from graphql_api.config import ApiSettings
from graphql_api.plan.cache import PlanCache
from tests.graphql_api.live import serving

_REQUEST_ID = re.compile(r"request id [^)]+")


def normalised(body: dict[str, Any]) -> dict[str, Any]:
    body = dict(body)
    body.pop("extensions", None)
    if "errors" in body:
        errors = []
        for error in body["errors"]:
            error = dict(error)
            error["message"] = _REQUEST_ID.sub("request id <id>", error["message"])
            if "extensions" in error and "requestId" in error["extensions"]:
                error["extensions"] = {**error["extensions"], "requestId": "<id>"}
            errors.append(error)
        body["errors"] = sorted(errors, key=lambda e: (str(e.get("path")), e["message"], str(e.get("locations"))))
    return body


@dataclass
class Differential:
    planned: httpx.Client
    general: httpx.Client
    planned_app: Starlette
    settings: ApiSettings

    @property
    def plans(self) -> PlanCache:
        cache = self.planned_app.state.plan_cache
        assert isinstance(cache, PlanCache)
        return cache

    def token(self, employee: Employee) -> str:
        return issue_token(self.settings, subject=employee.emp_id, org_id=employee.org_id, role=employee.role.value)

    def compare(
        self, caller: Employee, query: str, variables: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Both answers to ``query`` from ``caller``, normalised: (planned, graphql-core)."""
        headers = {"Authorization": f"Bearer {self.token(caller)}"}
        payload: dict[str, Any] = {"query": query}
        if variables is not None:
            payload["variables"] = variables
        answers = []
        for client in (self.planned, self.general):
            response = client.post("/graphql", json=payload, headers=headers)
            answers.append(normalised(response.json()))
        return answers[0], answers[1]


def differential(datastore: Datastore, settings: ApiSettings) -> Iterator[Differential]:
    planned_app = create_app(datastore, replace(settings, compiled_plans=True))
    with (
        serving(planned_app) as planned,
        serving(create_app(datastore, replace(settings, compiled_plans=False))) as general,
    ):
        yield Differential(planned, general, planned_app, settings)
