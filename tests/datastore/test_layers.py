"""The map of datastore/__init__.py holds: every import inside datastore/ runs down its list.

The imports are read from the source (every one, those under ``TYPE_CHECKING`` and inside
functions too), so a circle between packages, or an arrow back up, fails here before it
can fail at import time.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import datastore

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "datastore"


def layers() -> list[str]:
    """The map's names, top floor first: ``dev``, ``feed``, ..., ``config``, ``errors``."""
    assert datastore.__doc__ is not None
    return [
        name.removesuffix("/").removesuffix(".py")
        for name in re.findall(r"^  (\w+/|\w+\.py) ", datastore.__doc__, re.MULTILINE)
    ]


def layer_of(dotted: str) -> str:
    """``datastore.table.scoped`` -> ``table``; ``datastore.config`` -> ``config``."""
    return dotted.split(".")[1]


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of ``path`` that names a module of ours."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, f"{path}:{node.lineno}: a relative import"
            if node.module == "datastore":  # from datastore import config
                found.extend((node.lineno, f"datastore.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return [(line, module) for line, module in found if module.split(".")[0] in ("datastore", "graphql_api")]


def test_map__names_every_package_and_module_once() -> None:
    present = {path.name.removesuffix(".py") for path in PACKAGE.iterdir() if path.suffix == ".py" or path.is_dir()}
    present -= {"__init__", "__pycache__"}
    named = layers()
    assert sorted(named) == sorted(present)
    assert len(named) == len(set(named))


def test_imports__run_down_the_map__none_back_up_none_into_graphql_api() -> None:
    floor = {name: len(layers()) - index for index, name in enumerate(layers())}
    wrong: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[1:] == ("__init__.py",):
            continue
        own = relative.parts[1].removesuffix(".py")
        for line, module in imports(path):
            if module.split(".")[0] == "graphql_api" or module == "datastore":  # or the map itself
                wrong.append(f"{relative}:{line} imports {module}")
            elif floor[layer_of(module)] > floor[own]:
                wrong.append(f"{relative}:{line} ({own}) imports {module}, above it")
    assert wrong == []
