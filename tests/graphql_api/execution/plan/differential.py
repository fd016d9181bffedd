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

from datastore.kinds.entities import Employee
from datastore.table.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.execution.documents import Documents
from graphql_api.settings.api import ApiSettings
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
    def documents(self) -> Documents:
        """The planned app's documents, whose counters say which executor ran a query."""
        documents = self.planned_app.state.documents
        assert isinstance(documents, Documents)
        return documents

    def token(self, employee: Employee) -> str:
        return issue_token(self.settings, subject=employee.emp_id, org_id=employee.org_id, role=employee.role.value)

    def compare(
        self, caller: Employee, query: str, variables: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Both answers to ``query`` from ``caller``, normalised: (planned, graphql-core).

        Each must be a GraphQL response, never a plain-text 500: graphql-core cancelling the
        siblings of a failed non-null field once cancelled a read the caller check shared, and
        since each consumer of a key has a future of its own (execution/batch_loader.py) none does.
        """
        headers = {"Authorization": f"Bearer {self.token(caller)}"}
        payload: dict[str, Any] = {"query": query}
        if variables is not None:
            payload["variables"] = variables
        answers: list[dict[str, Any]] = []
        for client in (self.planned, self.general):
            response = client.post("/graphql", json=payload, headers=headers)
            assert response.status_code != 500, (client is self.planned, response.text)
            assert response.headers["content-type"].startswith("application/"), response.text
            answers.append(normalised(response.json()))
        return answers[0], answers[1]


def differential(datastore: Datastore, settings: ApiSettings) -> Iterator[Differential]:
    planned_app = create_app(datastore, replace(settings, compiled_plans=True))
    with (
        serving(planned_app) as planned,
        serving(create_app(datastore, replace(settings, compiled_plans=False))) as general,
    ):
        yield Differential(planned, general, planned_app, settings)


def nulled_position(data: Any, path: list[Any]) -> list[Any]:
    """The shortest prefix of ``path`` whose value in ``data`` is null: where the error's null landed."""
    value = data
    for depth, key in enumerate(path):
        if value is None:
            return path[:depth]
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return path[:depth]
    return path


def without_races(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the errors inside a nulled subtree replaced by that subtree's position, once.

    When a non-null field fails, graphql-core nulls its nearest nullable parent and drops the
    errors that come later from inside it; which errors came earlier (another failing
    non-null sibling, a nullable field deeper down) is a race of asynchronous resolvers, in
    graphql-core as between executors. So only where nulls landed is compared for those;
    errors that nulled exactly their own field are kept as they are.
    """
    if "errors" not in body:
        return body
    kept: list[Any] = []
    nulled: list[Any] = []
    for error in body["errors"]:
        path = error.get("path")
        landed = None if path is None else nulled_position(body.get("data"), path)
        if landed is None or landed == path:
            kept.append(error)
        elif {"propagatedTo": landed} not in nulled:
            nulled.append({"propagatedTo": landed})
    return {**body, "errors": sorted(kept + nulled, key=str)}
