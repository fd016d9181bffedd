"""graphql-codegen's client preset, persisted documents on, feeds TRUSTED_DOCUMENTS.

The README's command runs on tests/graphql_api/frontend/graphql_codegen/ (codegen.json,
operations.graphql): it emits typed documents and persisted-documents.json. A server started
with that manifest runs a document sent by its id only, from a TypeScript client compiled with
tsc and run by Node, and refuses anything else with PERSISTED_QUERY_REQUIRED.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphql_api.app import create_app
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.fixtures import Api, Demo
from tests.graphql_api.frontend.tools import GRAPHQL_CODEGEN, graphql_codegen_modules
from tests.graphql_api.live import serving, with_settings
from tests.paths import ROOT

REPO = ROOT
# The Node.js a fresh machine gets from Debian is enough; it must be there (no skipping).
NODE = shutil.which("node")


@dataclass(frozen=True)
class Generated:
    work: Path
    manifest: dict[str, str]

    @property
    def manifest_path(self) -> Path:
        return self.work / "gql" / "persisted-documents.json"


def run(command: list[str], cwd: Path) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, f"{command[0]}: {result.stdout}{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Generated:
    """The committed setup, generated and compiled in a scratch folder."""
    assert NODE is not None, "node is needed for the graphql-codegen test; install Node.js and npm"
    modules = graphql_codegen_modules()
    work = tmp_path_factory.mktemp("graphql-codegen")
    (work / "node_modules").symlink_to(modules, target_is_directory=True)
    config = json.loads((GRAPHQL_CODEGEN / "codegen.json").read_text())
    assert (GRAPHQL_CODEGEN / config["schema"]).resolve() == REPO / "schema.graphql"
    config["schema"] = str(REPO / "schema.graphql")  # the one path that depends on where it runs
    (work / "codegen.json").write_text(json.dumps(config))
    for name in ("operations.graphql", "client.ts", "tsconfig.json"):
        shutil.copy(GRAPHQL_CODEGEN / name, work / name)
    run([NODE, str(modules / ".bin" / "graphql-codegen"), "--config", "codegen.json"], work)
    run([NODE, str(modules / ".bin" / "tsc"), "-p", "tsconfig.json"], work)
    manifest = json.loads((work / "gql" / "persisted-documents.json").read_text())
    return Generated(work, manifest)


@pytest.fixture(scope="module")
def trusted_server(
    generated: Generated, new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> Iterator[httpx.Client]:
    settings = with_settings(api_settings, trusted_documents=str(generated.manifest_path))
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield http


def id_of(generated: Generated, operation: str) -> str:
    [document_id] = [key for key, text in generated.manifest.items() if text.startswith(f"query {operation} ")]
    return document_id


def test_manifest__ids_are_prefixed_sha256_of_the_text(generated: Generated) -> None:
    assert len(generated.manifest) == 2
    for document_id, text in generated.manifest.items():
        assert document_id == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_typescript_client__sends_id_only__runs_typed(
    generated: Generated, trusted_server: httpx.Client, api: Api, demo: Demo
) -> None:
    assert NODE is not None
    token = api.token(demo.person("alice@acme.co"))
    output = run([NODE, "out/client.js", str(trusted_server.base_url.join("/graphql")), token], generated.work)
    assert json.loads(output) == {"status": 200, "email": "alice@acme.co", "errors": []}


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(lambda hash: {"documentId": hash}, id="documentId"),
        pytest.param(
            lambda hash: {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": hash}}},
            id="sha256Hash-as-the-preset-emits-it",
        ),
        pytest.param(
            lambda hash: {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": hash.removeprefix("sha256:")}}},
            id="sha256Hash-bare-hex-as-apollo-sends-it",
        ),
    ],
)
def test_trusted_server__manifest_document_by_id__runs(
    generated: Generated, trusted_server: httpx.Client, api: Api, demo: Demo, body: Any
) -> None:
    headers = {"Authorization": f"Bearer {api.token(demo.person('bob@acme.co'))}"}
    response = trusted_server.post("/graphql", json=body(id_of(generated, "MyDepartment")), headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["me"]["department"]["name"] == "Engineering"


@pytest.mark.parametrize(
    "body",
    [
        {"query": "query Me { me { email role department { name } } }"},
        {"documentId": "sha256:" + hashlib.sha256(b"query Other { me { email } }").hexdigest()},
    ],
)
def test_trusted_server__document_not_in_manifest__persisted_query_required(
    trusted_server: httpx.Client, api: Api, demo: Demo, body: dict[str, Any]
) -> None:
    headers = {"Authorization": f"Bearer {api.token(demo.person('alice@acme.co'))}"}
    response = trusted_server.post("/graphql", json=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_REQUIRED"
