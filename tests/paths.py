"""Where the repository's files are, for tests at any depth of tests/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
README: Final = ROOT / "README.md"
ARTIFACTS: Final = ROOT / "tests" / "artifacts"
DOCS: Final = ROOT / "docs"
# The pages whose examples and tables the tests run or check, as a reader would paste them.
EXAMPLE_QUERIES: Final = DOCS / "api" / "queries.md"
MUTATIONS: Final = DOCS / "api" / "mutations.md"
BULK_ONBOARDING: Final = DOCS / "api" / "bulk-onboarding.md"
ERROR_CODES: Final = DOCS / "api" / "errors.md"
QUERY_COST: Final = DOCS / "security" / "query-cost.md"
FRONT_END: Final = DOCS / "api" / "front-end.md"


def graphql_blocks(*pages: Path) -> list[str]:
    """The ```graphql blocks of the pages, in order: each an operation exactly as printed."""
    return [block for page in pages for block in re.findall(r"```graphql\n(.*?)```", page.read_text(), re.S)]


def code_blocks(page: Path, language: str) -> list[str]:
    """The ```<language> blocks of ``page``, in order, each exactly as printed."""
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), re.S)
