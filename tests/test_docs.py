"""README.md and docs/ name only what exists: their links, the repository paths they cite, the packages.

`mkdocs build --strict` (in `make check`) fails on a broken link or anchor inside docs/ and on a
page missing from mkdocs.yml's nav; the README is outside the site, so its links are checked here,
and the paths of files and modules both name in their text are checked for every page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.paths import DOCS, README, ROOT

PAGES = [README, *sorted(DOCS.rglob("*.md"))]

# Files the text names that a run writes rather than the repository holding them.
WRITTEN_BY_A_RUN = ("build/", "bench/results/", "tests/artifacts/", ".cache/", ".data/", "gql/")
# Directories of the tree: a path whose first part is one of these is named from the root.
TOP_LEVEL = {path.name for path in ROOT.iterdir() if not path.name.startswith(".")}
# Every file of the repository's packages, by name: a bare `name.py` must be one of them.
SOURCE_NAMES = {path.name for path in ROOT.iterdir()} | {
    path.name for top in ("datastore", "graphql_api", "deploy", "bench", "tests") for path in (ROOT / top).rglob("*")
}
PATH = re.compile(r"^[\w.-]+(/[\w.*<>-]+)*/?$")


def _prose(text: str) -> str:
    """A page without its fenced blocks (commands and output show paths of other machines)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def _named_paths(text: str) -> list[str]:
    """Each `code span` of the prose that is a file or directory path, without a `:name` suffix."""
    found = []
    for span in re.findall(r"`([^`\n]+)`", _prose(text)):
        candidate = span.split(":", 1)[0].strip()
        looks_like_a_file = re.search(r"\.(py|md|toml|txt|lock|json|graphql|yml|mjs|ts|js|css)$", candidate)
        if PATH.match(candidate) and ("/" in candidate or looks_like_a_file) and not candidate.startswith("/"):
            found.append(candidate)
    return found


def test_pages__exist_and_the_docs_are_more_than_a_stub() -> None:
    assert README.is_file()
    assert len(PAGES) > 20, [page.name for page in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_page__every_repository_path_it_names__exists(page: Path) -> None:
    missing = []
    for name in _named_paths(page.read_text()):
        first = name.split("/", 1)[0]
        if name.startswith(WRITTEN_BY_A_RUN):
            continue
        if "/" in name and first in TOP_LEVEL:
            if not (ROOT / name.rstrip("/")).exists() and "*" not in name and "<" not in name:
                missing.append(name)
        elif "/" in name:
            # A path from inside a package (`limits/depth.py`): name it from the root.
            if any(ROOT.glob(f"*/{name.rstrip('/')}")) or any(ROOT.glob(f"*/*/{name.rstrip('/')}")):
                missing.append(f"{name} (name it from the repository's root)")
        elif name.endswith(".py") and name not in SOURCE_NAMES:
            missing.append(name)
    assert missing == [], f"{page.relative_to(ROOT)} names paths that do not exist"


def _named_modules(text: str) -> list[str]:
    """Each `code span` of the prose that is a dotted name in our packages (`graphql_api.entrypoints.asgi:app`)."""
    spans = re.findall(r"`((?:datastore|graphql_api|bench|deploy|tests)(?:\.\w+)+)(?::\w+)?`", _prose(text))
    return list(dict.fromkeys(spans))


def _is_module_or_in_one(dotted: str) -> bool:
    """The name is a module or package, or an attribute of one named by all but its last part."""
    parts = dotted.split(".")
    for cut in (len(parts), len(parts) - 1):
        base = ROOT.joinpath(*parts[:cut])
        if cut >= 2 and (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()):
            return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_page__every_module_it_names__exists(page: Path) -> None:
    missing = [name for name in _named_modules(page.read_text()) if not _is_module_or_in_one(name)]
    assert missing == [], f"{page.relative_to(ROOT)} names modules that do not exist"


def test_readme__every_relative_link__points_to_a_file() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", _prose(README.read_text()))
    relative = [link for link in links if not re.match(r"^[a-z]+:", link) and not link.startswith("#")]
    assert relative, "the README links to the docs"
    broken = [link for link in relative if not (ROOT / link.split("#", 1)[0]).exists()]
    assert broken == []


def test_readme__every_docs_page__linked() -> None:
    """The README's list of pages is the way in: it misses none of them."""
    links = set(re.findall(r"\]\((docs/[^)#\s]+)", README.read_text()))
    pages = {str(page.relative_to(ROOT)) for page in DOCS.rglob("*.md")}
    assert pages - links == set()


def test_readme_map__names_every_package() -> None:
    """The short map of the repository names every package of the two layers and each top directory."""
    text = README.read_text()
    (tree,) = re.findall(r"^## The repository\n(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    packages = [
        f"{path.parent.relative_to(ROOT)}/"
        for layer in ("datastore", "graphql_api")
        for path in sorted((ROOT / layer).glob("*/__init__.py"))
    ]
    tops = ["datastore/", "graphql_api/", "tests/", "bench/", "deploy/", "docs/"]
    missing = [name for name in [*tops, *packages] if f"`{name}`" not in tree]
    assert missing == []


def test_api_index__the_schema_block_it_quotes__is_schema_graphql_s() -> None:
    """docs/api/index.md quotes schema.graphql's ``schema { ... }`` block: the roots it names are those exported."""
    quoted = re.search(r"`(schema \{[^`]*\})`", (DOCS / "api" / "index.md").read_text())
    exported = re.match(r"schema \{[^}]*\}", (ROOT / "schema.graphql").read_text())
    assert quoted is not None and exported is not None
    assert quoted.group(1).split() == exported.group(0).split()
