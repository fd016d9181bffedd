"""The code's comments and docstrings stand on their own: none cites a tracker's issue or a
document that is not in the repository (the reader has neither)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.paths import ROOT

# "issue 12", "lever 4", "SPEC section 2", "PERFORMANCE.md": pointers a reader of the code cannot follow.
CITATION = re.compile(r"\b(?:issues? \d+|lever \d+|SPEC(?:\.md| section))|PERFORMANCE\.md", re.IGNORECASE)
TOPS = ("datastore", "graphql_api", "deploy", "bench", "tests")


def sources() -> list[Path]:
    return [ROOT / "server.py", *(path for top in TOPS for path in sorted((ROOT / top).rglob("*.py")))]


def test_sources__no_comment_cites_an_issue_or_a_document_outside_the_repository() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sources()
        if path != Path(__file__)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if CITATION.search(line)
    ]
    assert cited == []
