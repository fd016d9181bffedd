"""GraphiQL's EXPLAIN panel in a real browser: Alice runs the directory query (the bench's Q1)
and the panel shows its plan per field path, with the waves and calls the response's
``extensions.cost`` counts. The screenshot is kept in tests/artifacts/ (git-ignored)."""

from __future__ import annotations

import json

import httpx

from bench.queries import Q1
from tests.graphql_api.graphiql.chromium import Chromium
from tests.graphql_api.graphiql.test_browser import HEADER_EDITOR_HAS_TOKEN, choose
from tests.paths import ARTIFACTS

PANEL = ".hr-explain"


def test_graphiql__explain_panel__shows_the_directory_querys_plan(development: httpx.Client) -> None:
    origin = str(development.base_url).rstrip("/")
    with Chromium() as browser:
        page = browser.page()
        try:
            page.open(f"{origin}/graphql")
            page.wait_for("document.querySelectorAll('#hr-sign-in-as option').length > 1")
            page.evaluate(choose("alice@acme.co"))
            page.wait_for(HEADER_EDITOR_HAS_TOKEN)
            page.click('button[aria-label="Show EXPLAIN"]')
            page.wait_for(f"document.querySelector({json.dumps(PANEL)}) !== null")
            query_editor = "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
            page.evaluate(f"{query_editor}.setValue({json.dumps(Q1)})")
            page.click(".graphiql-execute-button")
            page.wait_for(f"document.querySelector({json.dumps(PANEL)}).innerText.includes('organization.departments')")
            totals = page.evaluate("document.querySelector('.hr-explain-totals').innerText")
            paths = page.evaluate(
                "[...document.querySelectorAll('.hr-explain-fields tbody tr td:first-child')].map((td) => td.innerText)"
            )
        finally:
            page.screenshot(ARTIFACTS / "graphiql-explain.png")
        problems = page.problems()
    assert paths == ["(request)", "organization.departments", "organization.departments.edges.node.employees"]
    assert totals.startswith("2 waves, ")
    assert problems == []
