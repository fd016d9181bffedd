"""GraphiQL runs a subscription: headless Chromium, the page's CSP in force, over its WebSocket.

Alice (Acme's admin) signs in with "Sign in as", runs ``employeeChanged`` and sees an employee
hired a moment later appear in the result pane: GraphiQL's own graphql-ws client, at the
subscription URL the page gives it, with the header editor's token in ``connection_init``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette

from datastore.aws.client import AsyncDynamo
from datastore.config import DatastoreSettings
from datastore.kinds.entities import Role
from datastore.table.scoped import Table
from datastore.tenancy.scope import TenantScope
from datastore.tenants import employees
from graphql_api.app import create_app
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.graphql_api.fixtures import Demo, load_demo
from tests.graphql_api.graphiql.chromium import Chromium
from tests.graphql_api.graphiql.test_browser import HEADER_EDITOR_HAS_TOKEN, RESULT, choose
from tests.graphql_api.live import serving
from tests.graphql_api.subscriptions.conftest import live_datastore, subscribed, wait_until_live
from tests.paths import ARTIFACTS

SUBSCRIPTION = "subscription { employeeChanged { action employee { email } } }"


@pytest.fixture(scope="module")
def streamed_demo(dynamo: AsyncDynamo, streamed_table_name: str) -> Demo:
    """The demo organisations in the session's streamed table (the session's table has no stream)."""
    return load_demo(dynamo, streamed_table_name)


@pytest.fixture(scope="module")
def live_development(
    streamed_table_name: str,
    settings: DatastoreSettings,
    streamed_demo: Demo,
    development_settings: ApiSettings,
) -> Iterator[tuple[Starlette, httpx.Client]]:
    app = create_app(live_datastore(settings, streamed_table_name), development_settings)
    with serving(app) as http:
        wait_until_live(app.state.live.feed.status)
        yield app, http


def test_graphiql__alice_subscribes__a_hire_appears_in_the_result_pane(
    live_development: tuple[Starlette, httpx.Client],
    streamed_demo: Demo,
    dynamo: AsyncDynamo,
    streamed_table_name: str,
) -> None:
    app, http = live_development
    alice = streamed_demo.person("alice@acme.co")
    origin = str(http.base_url).rstrip("/")
    table = Table(dynamo, streamed_table_name, TenantScope(alice.org_id))
    with Chromium() as browser:
        page = browser.page()
        try:
            page.open(f"{origin}/graphql")
            page.wait_for("document.querySelectorAll('#hr-sign-in-as option').length > 1")
            page.evaluate(choose("alice@acme.co"))
            page.wait_for(HEADER_EDITOR_HAS_TOKEN)
            # The page makes a new fetcher half a second after the headers last changed
            # (start.js), and GraphiQL stops what runs on the old one: subscribe after that.
            time.sleep(1.5)
            query_editor = "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
            page.evaluate(f"{query_editor}.setValue({SUBSCRIPTION!r})")
            # GraphiQL picks its transport from the editor's parsed document, which it updates
            # after the text (and again when the sign-in re-renders it): run once it says subscription.
            page.wait_for(f"{query_editor}.documentAST?.definitions[0]?.operation === 'subscription'")
            page.click(".graphiql-execute-button")
            subscribed(app, alice.org_id, seconds=30)
            hired = run(
                employees.create_employee(
                    table,
                    email="live.hire@acme.co",
                    first_name="Live",
                    last_name="Hire",
                    department_id=None,
                    role=Role.EMPLOYEE,
                )
            )
            page.wait_for(f"document.querySelector({json.dumps(RESULT)}).innerText.includes({hired.email!r})")
            shown = page.evaluate(f"document.querySelector({json.dumps(RESULT)}).innerText")
        finally:
            page.screenshot(ARTIFACTS / "graphiql-subscription.png")
        problems = page.problems()
    assert json.loads(shown.replace("\xa0", " "))["data"] == {
        "employeeChanged": {"action": "employee.create", "employee": {"email": hired.email}}
    }
    assert problems == []
