"""The graphql-http server audit (the GraphQL-over-HTTP spec's public test suite) against the live server.

The pinned npm package is fetched once into .cache/ and its ``auditServer`` run with Node
against the test server: every MUST passes; the SHOULDs and MAYs left are printed (run with
``-s`` to see them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from datastore.config import DatastoreSettings
from datastore.dev import npm

AUDIT_PACKAGE = "graphql-http@1.23.1"
RUNNER = """
const { auditServer } = require(process.argv[1]);
auditServer({ url: process.argv[2] }).then(
  (results) => console.log(
    JSON.stringify(results.map((r) => ({ name: r.name, status: r.status, reason: r.reason ?? null }))),
  ),
  (error) => { console.error(error); process.exit(1); },
);
"""


@pytest.fixture(scope="session")
def audit_module() -> Path:
    if shutil.which("node") is None:
        pytest.fail("node is needed to run the graphql-http audit; install Node.js")
    cache = Path(DatastoreSettings.from_env(os.environ).local_cache_dir)
    package = npm.fetch(cache, AUDIT_PACKAGE, purpose="the GraphQL-over-HTTP audit") / "package"
    return package / "lib" / "audits" / "server.js"


def run_audit(audit_module: Path, url: str) -> list[dict[str, Any]]:
    node = shutil.which("node")
    assert node is not None
    finished = subprocess.run(
        [node, "-e", RUNNER, str(audit_module), url], capture_output=True, text=True, check=True, timeout=120
    )
    results: list[dict[str, Any]] = json.loads(finished.stdout)
    return results


def test_graphql_http_audit__every_must__passes(audit_module: Path, server_url: str) -> None:
    results = run_audit(audit_module, f"{server_url}/graphql")
    musts = [result for result in results if result["name"].startswith("MUST")]
    failed = [f"{result['name']}: {result['reason']}" for result in musts if result["status"] != "ok"]
    left = [f"{result['name']}: {result['reason']}" for result in results if result["status"] != "ok"]
    passed = len(results) - len(left)
    musts_passed = len(musts) - len(failed)
    levels = {level: sum(r["name"].startswith(level) for r in results) for level in ("MUST", "SHOULD", "MAY")}
    print(f"\n{AUDIT_PACKAGE}: {passed}/{len(results)} audits pass ({levels}), MUSTs {musts_passed}/{len(musts)}")
    for line in left:
        print(f"  left: {line}")
    assert musts, "the audit ran no MUST"
    assert not failed, "\n".join(failed)


def test_graphql_http_audit__should_and_may__pass_too(audit_module: Path, server_url: str) -> None:
    """The README says every audit passes, SHOULDs and MAYs included: keep it so."""
    results = run_audit(audit_module, f"{server_url}/graphql")
    left = [f"{result['name']}: {result['reason']}" for result in results if result["status"] != "ok"]
    assert len(results) == 61
    assert not left, "\n".join(left)
