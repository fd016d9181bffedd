"""GraphiQL on a server that enforces trusted documents, in a real browser.

The page's own introspection, sent before anyone signs in, is refused like any unlisted
document (400 PERSISTED_QUERY_REQUIRED: "Error fetching schema"); signing in as the platform
operator, whose role bypasses the manifest (TRUSTED_DOCUMENTS_BYPASS_ROLES), fetches the
schema again as them, and the documentation explorer and any query work.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import httpx
import pytest

from graphql_api.app import create_app
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.fixtures import Demo
from tests.graphql_api.graphiql.chromium import Chromium
from tests.graphql_api.graphiql.test_browser import HEADER_EDITOR_HAS_TOKEN, RESULT, choose
from tests.graphql_api.live import serving, with_settings
from tests.paths import ARTIFACTS

QUERY: Final = "{ organizations(first: 5) { edges { node { name } } } }"
DOCS: Final = "document.querySelector('.graphiql-doc-explorer')"
DOCS_SHOW_THE_ROOTS: Final = f"{DOCS}?.innerText.includes('mutation: Mutation')"
DOCS_CANNOT_FETCH: Final = (
    "document.querySelector('.graphiql-doc-explorer-error')?.innerText === 'Error fetching schema'"
)


@pytest.fixture(scope="module")
def trusted_development(
    new_datastore: DatastoreFactory,
    table_name: str,
    demo: Demo,
    development_settings: ApiSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[httpx.Client]:
    manifest = Path(tmp_path_factory.mktemp("graphiql-trusted")) / "persisted-documents.json"
    manifest.write_text(json.dumps({"me": "query Me { me { email } }"}))
    settings = with_settings(development_settings, trusted_documents=str(manifest))
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield http


def test_graphiql__trusted_documents__operator_introspects_and_queries(trusted_development: httpx.Client) -> None:
    origin = str(trusted_development.base_url).rstrip("/")
    with Chromium() as browser:
        page = browser.page()
        try:
            page.open(f"{origin}/graphql")
            page.wait_for("document.querySelectorAll('#hr-sign-in-as option').length > 1")
            page.click("button[aria-label='Show Documentation Explorer']")
            page.wait_for(DOCS_CANNOT_FETCH)
            refused_before_signing_in = page.problems()
            assert page.evaluate(choose("Platform operator")) == "Platform operator"
            page.wait_for(HEADER_EDITOR_HAS_TOKEN)
            page.wait_for(DOCS_SHOW_THE_ROOTS)
            query_editor = "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
            page.evaluate(f"{query_editor}.setValue({json.dumps(QUERY)})")
            page.click(".graphiql-execute-button")
            page.wait_for(f"document.querySelector({json.dumps(RESULT)}).innerText.includes('Acme')")
            # The whole response, not the lines CodeMirror has drawn (innerText stops at the pane's end).
            shown = page.evaluate("document.querySelector('.graphiql-response .CodeMirror').CodeMirror.getValue()")
        finally:
            page.screenshot(ARTIFACTS / "graphiql-trusted-documents-operator.png")
        problems = page.problems()
    names = [edge["node"]["name"] for edge in json.loads(shown)["data"]["organizations"]["edges"]]
    assert any("Acme" in name for name in names), names
    # The only problems are the refusals of the introspection sent before signing in (GraphiQL
    # sends it twice, the second time without subscriptions), which the browser reports.
    assert refused_before_signing_in and all("status of 400" in problem for problem in refused_before_signing_in)
    assert problems == refused_before_signing_in


def test_graphiql__trusted_documents__operator_pastes_a_token_and_refetches(
    trusted_development: httpx.Client, development_settings: ApiSettings
) -> None:
    """Outside development there is no "Sign in as": the operator writes the header, and the
    page fetches the schema again with it."""
    origin = str(trusted_development.base_url).rstrip("/")
    token = issue_token(development_settings, subject="operator", org_id=None, role=PLATFORM_ROLE)
    header = json.dumps({"Authorization": f"Bearer {token}"})
    with Chromium() as browser:
        page = browser.page()
        try:
            page.open(f"{origin}/graphql")
            page.wait_for("document.querySelectorAll('#hr-sign-in-as option').length > 1")
            page.click("button[aria-label='Show Documentation Explorer']")
            page.wait_for(DOCS_CANNOT_FETCH)
            header_editor = "document.querySelectorAll('.graphiql-editor-tool .CodeMirror')"
            page.evaluate(f"[...{header_editor}].at(-1).CodeMirror.setValue({json.dumps(header)})")
            page.wait_for(DOCS_SHOW_THE_ROOTS)
        finally:
            page.screenshot(ARTIFACTS / "graphiql-trusted-documents-refetch.png")
