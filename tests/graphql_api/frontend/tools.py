"""The front-end code generators, pinned and installed once into the git-ignored .cache/.

- ariadne-codegen needs graphql-core < 3.3, which Strawberry does not allow in our venv, so
  it gets a virtualenv of its own under .cache/ (a tool, like a front-end team's own venv);
  the client it generates needs only httpx and pydantic, and is imported by the tests.
- graphql-codegen (CLI, client preset, graphql, typescript), Apollo Client (with its
  persisted-queries link), urql (with its auth exchange), the graphql-ws client (with Node's
  ws), graphql-sse's client and panva's oidc-provider (the sign-in tests' identity providers,
  tests/graphql_api/oidc.py) are each installed with ``npm ci`` from their committed
  package.json and package-lock.json into .cache/, renamed into place last, so an
  interrupted install never looks complete and later runs need no network.

Neither is ever skipped: without npm or a reachable registry on first use, the test fails and
says why.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from datastore.config import DatastoreSettings

HERE: Final = Path(__file__).parent
ARIADNE_CODEGEN: Final = "ariadne-codegen==0.19.0"
GRAPHQL_CODEGEN: Final = HERE / "graphql_codegen"
APOLLO_CLIENT: Final = HERE / "apollo_client"
URQL: Final = HERE / "urql"
OIDC_PROVIDER: Final = HERE / "oidc_provider"
GRAPHQL_WS: Final = HERE / "graphql_ws"
GRAPHQL_SSE: Final = HERE / "graphql_sse"
# npm's flags for the committed lock: no install scripts, and peers as the lock resolved them.
NPM_CI: Final = ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--legacy-peer-deps", "--loglevel=error"]


def cache_dir() -> Path:
    return Path(DatastoreSettings.from_env(os.environ).local_cache_dir).resolve()


def _run(command: list[str], what: str, cwd: Path | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")


def ariadne_codegen() -> Path:
    """The ``ariadne-codegen`` executable of the pinned version, installed on first use."""
    venv = cache_dir() / ARIADNE_CODEGEN.replace("==", "-")
    executable = venv / "bin" / "ariadne-codegen"
    complete = venv / ".complete"
    if complete.is_file():
        return executable
    # A virtualenv cannot be moved once made: build it in place, mark it complete last.
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], "python -m venv")
    _run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", ARIADNE_CODEGEN],
        f"pip install {ARIADNE_CODEGEN}",
    )
    complete.write_text(ARIADNE_CODEGEN + "\n")
    return executable


def graphql_codegen_modules() -> Path:
    """The ``node_modules`` of graphql-codegen's pinned packages, installed on first use."""
    return _npm_modules(GRAPHQL_CODEGEN, "graphql-codegen", Path(".bin") / "graphql-codegen")


def apollo_client_modules() -> Path:
    """The ``node_modules`` of Apollo Client's pinned packages, installed on first use."""
    return _npm_modules(APOLLO_CLIENT, "apollo-client", Path("@apollo") / "client" / "package.json")


def graphql_ws_modules() -> Path:
    """The ``node_modules`` of the graphql-ws client and Node's ws, pinned, installed on first use."""
    return _npm_modules(GRAPHQL_WS, "graphql-ws", Path("graphql-ws") / "package.json")


def graphql_sse_modules() -> Path:
    """The ``node_modules`` of graphql-sse's client, pinned, installed on first use."""
    return _npm_modules(GRAPHQL_SSE, "graphql-sse", Path("graphql-sse") / "package.json")


def urql_modules() -> Path:
    """The ``node_modules`` of urql's pinned packages, installed on first use."""
    return _npm_modules(URQL, "urql", Path("@urql") / "exchange-auth" / "package.json")


def oidc_provider_modules() -> Path:
    """The ``node_modules`` of panva's oidc-provider, pinned, installed on first use."""
    return _npm_modules(OIDC_PROVIDER, "oidc-provider", Path("oidc-provider") / "package.json")


def _npm_modules(source: Path, name: str, installed: Path) -> Path:
    """``npm ci`` of ``source``'s committed package.json and lock into .cache/, once per lock."""
    lock = (source / "package-lock.json").read_bytes() + (source / "package.json").read_bytes()
    target = cache_dir() / f"{name}-{hashlib.sha256(lock).hexdigest()[:12]}"
    if (target / "node_modules" / installed).exists():
        return target / "node_modules"
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is needed once to install {name} (tests/graphql_api/frontend); install Node.js")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        work = Path(scratch) / "install"
        work.mkdir()
        for file in ("package.json", "package-lock.json"):
            shutil.copy(source / file, work / file)
        _run([npm, *NPM_CI], f"npm ci ({name})", cwd=work)
        shutil.rmtree(target, ignore_errors=True)
        work.rename(target)
    return target / "node_modules"
