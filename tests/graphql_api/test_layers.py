"""graphql_api's layers (the map in graphql_api/__init__.py): every import runs down the map.

Read from the source, so an import inside a function or under TYPE_CHECKING counts too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import graphql_api
from tests.paths import ROOT

PACKAGE = ROOT / "graphql_api"
MAP_LINE = re.compile(r"^    ([\w, ]+?)\s{2,}\S")


def layers() -> dict[str, int]:
    """Each part of graphql_api (a subpackage, or a module of its own) and its line, ground first."""
    assert graphql_api.__doc__ is not None
    found: dict[str, int] = {}
    for line in graphql_api.__doc__.splitlines():
        match = MAP_LINE.match(line)
        if match is not None:
            for name in match[1].split(","):
                found[name.strip()] = len(set(found.values()))
    return found


def part_of(module: str) -> str | None:
    """The part of graphql_api ``module`` belongs to; None outside graphql_api (or for the package itself)."""
    names = module.split(".")
    return names[1] if names[0] == "graphql_api" and len(names) > 1 else None


def module_of(path: Path) -> str:
    names = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module imported) for every import of the file, wherever it stands."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            # ``from graphql_api import bulk``: the names may be parts themselves.
            yield from (
                (node.lineno, f"{base}.{alias.name}" if base == "graphql_api" else base) for alias in node.names
            )


def test_map__names_every_part_of_graphql_api_once() -> None:
    parts = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()}
    parts -= {"__init__", "__pycache__"}
    assert set(layers()) == parts


def test_imports__run_down_the_map() -> None:
    rank = layers()
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = part_of(module_of(path))
        for line, imported in imports(path):
            target = part_of(imported)
            if source is None or target is None or target == source:
                continue
            if rank[target] >= rank[source]:
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {imported} ({source} -> {target})")
    assert upward == []


def test_package__imports_nothing() -> None:
    assert list(imports(PACKAGE / "__init__.py")) == []
