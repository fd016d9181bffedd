"""GraphiQL in a real browser: headless Chromium, no internet, the page's strict CSP in force.

A person opens /graphql, picks Alice in "Sign in as", runs ``{ me { email } }`` and reads her
email in the result pane. The screenshot is kept in tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

import json
from typing import Final

import httpx

from tests.graphql_api.graphiql.chromium import Chromium
from tests.paths import ARTIFACTS

QUERY: Final = "{ me { email } }"  # repr() is a valid JavaScript string literal too
RESULT: Final = ".graphiql-response .CodeMirror-code"
HEADER_EDITOR_HAS_TOKEN: Final = """[...document.querySelectorAll(".graphiql-editor-tool .CodeMirror")]
  .some((editor) => editor.CodeMirror.getValue().includes('"Authorization": "Bearer '))"""


def choose(label_part: str) -> str:
    """JavaScript choosing the first "Sign in as" option whose label contains ``label_part``."""
    return f"""(() => {{
      const select = document.getElementById("hr-sign-in-as");
      const option = [...select.options].find((o) => o.text.includes({json.dumps(label_part)}));
      select.value = option.value;
      select.dispatchEvent(new Event("change", {{ bubbles: true }}));
      return option.text;
    }})()"""


def test_graphiql__sign_in_as_alice__runs_me_offline_under_csp(development: httpx.Client) -> None:
    origin = str(development.base_url).rstrip("/")
    with Chromium() as browser:
        page = browser.page()
        try:
            page.open(f"{origin}/graphql")
            page.wait_for("document.querySelectorAll('#hr-sign-in-as option').length > 1")
            assert "alice@acme.co" in page.evaluate(choose("alice@acme.co"))
            page.wait_for(HEADER_EDITOR_HAS_TOKEN)
            query_editor = "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
            page.evaluate(f"{query_editor}.setValue({QUERY!r})")
            page.click(".graphiql-execute-button")
            page.wait_for(f"document.querySelector({json.dumps(RESULT)}).innerText.includes('alice@acme.co')")
            shown = page.evaluate(f"document.querySelector({json.dumps(RESULT)}).innerText")
        finally:
            # Kept on failure too: it shows where the page got stuck.
            page.screenshot(ARTIFACTS / "graphiql-sign-in-as-alice.png")
        problems = page.problems()
        urls = page.requested_urls()
    # CodeMirror indents with no-break spaces; the pane shows the whole (small) response.
    assert json.loads(shown.replace("\xa0", " "))["data"] == {"me": {"email": "alice@acme.co"}}
    assert problems == []
    assert urls, "the browser made no requests"
    assert [url for url in urls if not url.startswith((origin + "/", "data:"))] == []
    assert f"{origin}/dev/tokens" in urls
