"""ALLOWED_HOSTS (graphql_api/http/hosts.py), over HTTP: a foreign Host is refused, no redirect reflects one.

Each test serves the app with the settings it needs and sends the Host header a browser
would send after DNS rebinding (the attacker's own name) or a proxy would pass on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from datastore.config import ConfigError
from datastore.dev.local import free_port
from graphql_api.app import create_app
from graphql_api.settings.api import DEVELOPMENT_HOSTS, ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import TEST_SECRET, Api
from tests.graphql_api.live import serving, with_settings
from tests.server_process import ROOT

ME = {"query": "{ me { email } }"}
FOREIGN = "rebind.attacker.example"


@contextmanager
def served(new_datastore: DatastoreFactory, table_name: str, settings: ApiSettings) -> Iterator[httpx.Client]:
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield http


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    [error] = response.json()["errors"]
    assert error["extensions"] == {"code": "BAD_REQUEST"}
    assert "location" not in response.headers


def test_foreign_host__400_coded__trusted_host__served(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, api: Api, tenant: Tenant
) -> None:
    settings = with_settings(api_settings, allowed_hosts=("api.example.com", "*.hr.example"))
    bearer = {"Authorization": f"Bearer {api.token(tenant.admin)}"}
    with served(new_datastore, table_name, settings) as http:
        for host in (FOREIGN, "127.0.0.1", "api.example.com.attacker.example", "hr.example"):
            assert_refused(http.post("/graphql", json=ME, headers={**bearer, "Host": host}))
        assert_refused(http.post("/auth/token", headers={"Host": FOREIGN}))
        for host in ("api.example.com", "API.example.com:8443", "eu.hr.example"):
            response = http.post("/graphql", json=ME, headers={**bearer, "Host": host})
            assert response.status_code == 200
            assert response.json()["data"] == {"me": {"email": tenant.admin.email}}


def test_development__default_hosts__loopback_names_only(new_datastore: DatastoreFactory, table_name: str) -> None:
    settings = ApiSettings.from_env({"HR_ENV": "development", "JWT_SECRET": TEST_SECRET, "GRAPHIQL": "false"})
    assert settings.allowed_hosts == DEVELOPMENT_HOSTS == ("localhost", "127.0.0.1", "[::1]")
    with served(new_datastore, table_name, settings) as http:
        port = http.base_url.port
        for host in ("localhost", "127.0.0.1", "[::1]", "LOCALHOST"):
            # Anonymous `me` is refused by the API (401), not by the host check.
            assert http.post("/graphql", json=ME, headers={"Host": f"{host}:{port}"}).status_code == 401
        for host in (FOREIGN, "localhost.attacker.example", "127.0.0.2", "[::2]", "0.0.0.0"):
            assert_refused(http.post("/graphql", json=ME, headers={"Host": f"{host}:{port}"}))


def test_trailing_slash__never_redirects__foreign_host_refused_first(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    strict = with_settings(api_settings, allowed_hosts=("127.0.0.1",))
    with served(new_datastore, table_name, strict) as http:
        assert_refused(http.post("/graphql/", json=ME, headers={"Host": FOREIGN}))
        assert_refused(http.get("/graphql/?query={__typename}", headers={"Host": FOREIGN}))
        same = http.post("/graphql/", json=ME)
        assert same.status_code == 404 and "location" not in same.headers
    # Even with every host allowed, /graphql/ is not a redirect that could point elsewhere.
    anyone = with_settings(api_settings, allowed_hosts=("*",))
    with served(new_datastore, table_name, anyone) as http:
        for path in ("/graphql/", "/auth/token/", "/healthz/"):
            response = http.get(path, headers={"Host": FOREIGN})
            assert response.status_code in (404, 405) and "location" not in response.headers, path
            assert FOREIGN not in response.text


def test_health__any_host__answered_for_load_balancers(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    strict = with_settings(api_settings, allowed_hosts=("api.example.com",))
    with served(new_datastore, table_name, strict) as http:
        # An ALB or Kubernetes probe addresses the target by its IP.
        for host in ("10.0.3.17:8000", FOREIGN):
            assert http.get("/healthz", headers={"Host": host}).json() == {"status": "ok"}
            assert http.get("/readyz", headers={"Host": host}).status_code == 200
        assert_refused(http.get("/graphql?query={__typename}", headers={"Host": "10.0.3.17:8000"}))


def test_settings__outside_development__required_to_serve(new_datastore: DatastoreFactory, table_name: str) -> None:
    production = {"HR_ENV": "production", "JWT_SECRET": TEST_SECRET}
    unset = ApiSettings.from_env(production)  # a tool (server.py token) needs no hosts
    with pytest.raises(ConfigError, match="ALLOWED_HOSTS must be set outside development"):
        create_app(new_datastore(table_name), unset)
    hosts = ApiSettings.from_env({**production, "ALLOWED_HOSTS": " API.example.com, *.hr.example "}).allowed_hosts
    assert hosts == ("api.example.com", "*.hr.example")
    assert ApiSettings.from_env({**production, "ALLOWED_HOSTS": "*"}).allowed_hosts == ("*",)
    for bad in ("api.*.example", "*hr.example"):
        with pytest.raises(ConfigError, match="ALLOWED_HOSTS"):
            ApiSettings.from_env({**production, "ALLOWED_HOSTS": bad})


def test_server_run__outside_development_without_hosts__one_line_before_anything_starts() -> None:
    env = {**os.environ, "HR_ENV": "production", "JWT_SECRET": TEST_SECRET, "PORT": str(free_port())}
    env.pop("ALLOWED_HOSTS", None)
    result = subprocess.run(
        [sys.executable, "server.py", "run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stdout == ""  # no engine started, nothing served
    assert result.stderr.startswith("error: ALLOWED_HOSTS must be set outside development")
    assert len(result.stderr.strip().splitlines()) == 1
