"""TRUSTED_DOCUMENTS_MODE=audit: unlisted documents run, logged once by hash and counted, bounded.

A server of its own with a one-document manifest in audit mode, over HTTP: what the clients
not yet in the manifest send keeps working while the log and ``hr_unlisted_documents_total``
say what is left to add.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from graphql_api.app import create_app
from graphql_api.settings.api import ApiSettings, ConfigError
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import TEST_SECRET, Api
from tests.graphql_api.live import serving, with_settings
from tests.graphql_api.observability.logs import captured_lines

LISTED = "query Listed { __typename }"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def counted(document: str) -> float:
    return REGISTRY.get_sample_value("hr_unlisted_documents_total", {"document": document}) or 0.0


@pytest.fixture(scope="module")
def audit(
    new_datastore: DatastoreFactory,
    table_name: str,
    api_settings: ApiSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[httpx.Client]:
    manifest = Path(tmp_path_factory.mktemp("audit")) / "persisted-documents.json"
    manifest.write_text(json.dumps({sha256(LISTED): LISTED}))
    settings = with_settings(
        api_settings, trusted_documents=str(manifest), trusted_documents_mode="audit", metrics_max_operations=3
    )
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield http


def post(http: httpx.Client, api: Api, tenant: Tenant, body: dict[str, Any]) -> httpx.Response:
    return http.post("/graphql", json=body, headers={"Authorization": f"Bearer {api.token(tenant.admin)}"})


def test_audit__unlisted_document__runs_logged_once_and_counted_each_time(
    audit: httpx.Client, api: Api, tenant: Tenant
) -> None:
    text = f"query Unlisted{tenant.org_id[-6:]} {{ me {{ email }} }}"
    digest = sha256(text)
    with captured_lines(logging.WARNING) as captured:
        for _ in range(2):
            response = post(audit, api, tenant, {"query": text})
            assert response.json()["data"] == {"me": {"email": tenant.admin.email}}
        lines = [line for line in captured.lines() if line["logger"] == "hr.persisted"]
    assert len(lines) == 1, lines
    assert lines[0]["message"].startswith(
        f"unlisted document ran (TRUSTED_DOCUMENTS_MODE=audit): sha256:{digest} operation Unlisted{tenant.org_id[-6:]}"
    )
    assert (lines[0]["documentHash"], lines[0]["operationName"]) == (
        f"sha256:{digest}",
        f"Unlisted{tenant.org_id[-6:]}",
    )
    assert counted(digest) == 2


def test_audit__listed_document__neither_logged_nor_counted(audit: httpx.Client, api: Api, tenant: Tenant) -> None:
    with captured_lines(logging.WARNING) as captured:
        for body in ({"query": LISTED}, {"documentId": sha256(LISTED)}):
            assert post(audit, api, tenant, body).json()["data"] == {"__typename": "Query"}
        assert [line for line in captured.lines() if line["logger"] == "hr.persisted"] == []
    assert counted(sha256(LISTED)) == 0


def test_audit__unlisted_id_alone__not_found_then_its_text_runs(audit: httpx.Client, api: Api, tenant: Tenant) -> None:
    """Apollo's persisted-queries link: the hash alone, then (on NOT_FOUND) the hash and the text."""
    text = f"query Apq{tenant.org_id[-6:]} {{ me {{ email }} }}"
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": sha256(text)}}
    first = post(audit, api, tenant, {"extensions": extensions})
    assert first.status_code == 200
    assert first.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    second = post(audit, api, tenant, {"query": text, "extensions": extensions})
    assert second.json()["data"] == {"me": {"email": tenant.admin.email}}


def test_audit__labels_bounded__the_rest_other(audit: httpx.Client, api: Api, tenant: Tenant) -> None:
    """A caller chooses the text, and so the hash: past METRICS_MAX_OPERATIONS (3 here) they are ``other``."""
    before = counted("other")
    for index in range(5):
        post(audit, api, tenant, {"query": f"query Many{index}{tenant.org_id[-6:]} {{ __typename }}"})
    assert counted("other") >= before + 2


def test_audit__document_not_valid__still_refused_by_graphql(audit: httpx.Client, api: Api, tenant: Tenant) -> None:
    response = post(audit, api, tenant, {"query": "{ me { salary } }"})
    assert response.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


# --- settings --------------------------------------------------------------------------------


BASE = {"HR_ENV": "test", "JWT_SECRET": TEST_SECRET}


def test_settings__defaults__enforce_and_platform_operators() -> None:
    settings = ApiSettings.from_env({**BASE, "TRUSTED_DOCUMENTS": "manifest.json"})
    assert (settings.trusted_documents_mode, settings.trusted_documents_bypass_roles) == ("enforce", ("platform",))


def test_settings__audit_and_roles__read() -> None:
    env = {**BASE, "TRUSTED_DOCUMENTS": "m.json", "TRUSTED_DOCUMENTS_MODE": "Audit"}
    assert ApiSettings.from_env(env).trusted_documents_mode == "audit"
    roles = ApiSettings.from_env({**env, "TRUSTED_DOCUMENTS_BYPASS_ROLES": "platform, admin"})
    assert roles.trusted_documents_bypass_roles == ("platform", "admin")
    assert ApiSettings.from_env({**env, "TRUSTED_DOCUMENTS_BYPASS_ROLES": "none"}).trusted_documents_bypass_roles == ()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TRUSTED_DOCUMENTS_MODE": "audit"}, "TRUSTED_DOCUMENTS_MODE needs TRUSTED_DOCUMENTS"),
        ({"TRUSTED_DOCUMENTS": "m.json", "TRUSTED_DOCUMENTS_MODE": "log"}, "must be one of enforce, audit"),
        ({"TRUSTED_DOCUMENTS_BYPASS_ROLES": "owner"}, "owner is no role"),
    ],
)
def test_settings__wrong__refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ApiSettings.from_env({**BASE, **env})
