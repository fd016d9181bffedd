"""Trusted documents over graphql-ws: a subscription sent by its id, as graphql-codegen's client preset lists it.

graphql-codegen's client preset (persisted documents on) makes the manifest from a
subscription (graphql_ws/subscriptions.graphql); a live server started with it as
TRUSTED_DOCUMENTS runs that subscription for the graphql-ws client sending, as it must, a
``query`` beside the id: ``{"query": "", "documentId": ...}`` or the persisted-query extension.
An id the manifest lacks is refused PERSISTED_QUERY_REQUIRED, as over HTTP.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from starlette.applications import Starlette

from datastore.config import DatastoreSettings
from graphql_api.app import create_app
from graphql_api.auth.tokens import issue_token
from graphql_api.settings.api import ApiSettings
from tests.conftest import TenantFactory
from tests.graphql_api.frontend.graphql_ws_client import LiveClient, node_work
from tests.graphql_api.frontend.test_graphql_codegen import run
from tests.graphql_api.frontend.tools import GRAPHQL_WS, graphql_codegen_modules
from tests.graphql_api.live import serving

# The subscription suites' streamed table, where this module's tenants are made.
from tests.graphql_api.subscriptions.conftest import (  # noqa: F401
    live_datastore,
    live_settings,
    subscribed,
    table_name,
    wait_until_live,
)
from tests.paths import ROOT

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NODE = shutil.which("node")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """graphql-codegen's client preset over the subscription: its persisted-documents.json."""
    assert NODE is not None, "node is needed for the graphql-codegen test; install Node.js and npm"
    modules = graphql_codegen_modules()
    work = tmp_path_factory.mktemp("graphql-codegen-ws")
    (work / "node_modules").symlink_to(modules, target_is_directory=True)
    shutil.copy(GRAPHQL_WS / "subscriptions.graphql", work / "subscriptions.graphql")
    config = {
        "schema": str(ROOT / "schema.graphql"),
        "documents": ["subscriptions.graphql"],
        "generates": {"gql/": {"preset": "client", "presetConfig": {"persistedDocuments": True}}},
    }
    (work / "codegen.json").write_text(json.dumps(config))
    run([NODE, str(modules / ".bin" / "graphql-codegen"), "--config", "codegen.json"], work)
    return work / "gql" / "persisted-documents.json"


@pytest.fixture(scope="module")
def trusted_live(
    manifest: Path,
    client: DynamoDBClient,
    table_name: str,  # noqa: F811
    settings: DatastoreSettings,
    api_settings: ApiSettings,
) -> Iterator[tuple[Starlette, httpx.Client]]:
    app = create_app(
        live_datastore(settings, table_name),
        live_settings(api_settings, trusted_documents=str(manifest)),
    )
    with serving(app, ws_max_size=api_settings.max_body_bytes) as http:
        wait_until_live(app.state.live.feed.status)
        yield app, http


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return node_work(tmp_path_factory.mktemp("graphql-ws-trusted"))


@pytest.fixture
def clients() -> Iterator[list[LiveClient]]:
    started: list[LiveClient] = []
    yield started
    for each in started:
        each.close()


def hires_id(manifest: Path) -> str:
    listed: dict[str, str] = json.loads(manifest.read_text())
    [(document_id, text)] = listed.items()
    assert text.startswith("subscription Hires")
    assert document_id == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return document_id


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(lambda document_id: {"query": "", "documentId": document_id}, id="documentId"),
        pytest.param(
            lambda document_id: {
                "query": "",
                "extensions": {"persistedQuery": {"version": 1, "sha256Hash": document_id.removeprefix("sha256:")}},
            },
            id="persistedQuery",
        ),
    ],
)
def test_subscription_by_its_manifest_id__empty_query__runs(
    manifest: Path,
    trusted_live: tuple[Starlette, httpx.Client],
    work: Path,
    api_settings: ApiSettings,
    make_tenant: TenantFactory,
    clients: list[LiveClient],
    payload: Any,
) -> None:
    app, http = trusted_live
    tenant = make_tenant("Ws Trusted")
    admin = tenant.admin
    token = issue_token(api_settings, subject=admin.emp_id, org_id=admin.org_id, role=admin.role.value)
    sent = payload(hires_id(manifest))
    live = LiveClient(work, str(http.base_url).rstrip("/"), sent, 1, token=token)
    clients.append(live)
    subscribed(app, tenant.org_id, seconds=30)
    hired = tenant.employee()
    live.until("events", seconds=30)
    [result] = live.results()
    assert result["data"]["employeeChanged"]["employee"] == {"email": hired.email}
    assert [frame["payload"] for frame in live.sent() if frame["type"] == "subscribe"] == [sent]


def test_id_not_in_the_manifest__persisted_query_required(
    trusted_live: tuple[Starlette, httpx.Client],
    work: Path,
    api_settings: ApiSettings,
    make_tenant: TenantFactory,
    clients: list[LiveClient],
) -> None:
    _app, http = trusted_live
    tenant = make_tenant("Ws Untrusted")
    admin = tenant.admin
    token = issue_token(api_settings, subject=admin.emp_id, org_id=admin.org_id, role=admin.role.value)
    other = "sha256:" + hashlib.sha256(b"subscription Other { employeeChanged { cursor } }").hexdigest()
    live = LiveClient(work, str(http.base_url).rstrip("/"), {"query": "", "documentId": other}, 1, token=token)
    clients.append(live)
    [refused] = live.until("error", seconds=30)
    assert [error["extensions"]["code"] for error in refused["error"]] == ["PERSISTED_QUERY_REQUIRED"]
