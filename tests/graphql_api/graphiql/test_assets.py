"""GraphiQL's assets: the pinned packages' own files, only the named ones, nothing else."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from graphql_api.graphiql.assets import ASSETS, ensure_installed
from graphql_api.settings.api import ApiSettings


def test_asset__served__same_bytes_as_the_pinned_package(http: httpx.Client, api_settings: ApiSettings) -> None:
    files = ensure_installed(api_settings.graphiql_cache_dir)
    for name in ("graphiql.min.js", "react.production.min.js", "start.js"):
        response = http.get(f"/graphiql/assets/{name}")
        assert response.status_code == 200
        assert response.content == files[name].read_bytes()


def test_assets__pinned_versions__graphiql_3_and_react_18() -> None:
    specs = {package.spec for package, _ in ASSETS.values() if package is not None}
    assert specs == {"graphiql@3.8.3", "react@18.3.1", "react-dom@18.3.1"}


@pytest.mark.parametrize(
    "path",
    [
        "/graphiql/assets/graphiql.min.js.map",
        "/graphiql/assets/package.json",
        "/graphiql/assets/..%2F..%2Fpyproject.toml",
        "/graphiql/assets/%2E%2E%2Fconfig.py",
        "/graphiql/assets/",
    ],
)
def test_asset__not_listed__404(http: httpx.Client, path: str) -> None:
    assert http.get(path).status_code == 404


def test_asset__post__405(http: httpx.Client) -> None:
    assert http.post("/graphiql/assets/start.js").status_code == 405


def test_assets__cache_without_the_packages__fetched_with_npm(tmp_path: Path, api_settings: ApiSettings) -> None:
    """A fresh cache is filled from npm (the registry, or npm's own cache when offline)."""
    files = ensure_installed(tmp_path)
    assert files["graphiql.min.js"].read_bytes() == (
        ensure_installed(api_settings.graphiql_cache_dir)["graphiql.min.js"].read_bytes()
    )
