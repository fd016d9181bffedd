"""The one settings object (graphql_api/settings/__init__.py): the only reader of the environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from datastore.config import ConfigError, DatastoreSettings
from datastore.proxy import Proxies, Proxy
from graphql_api.settings import ServerSettings, Settings, child_environment, hand_down_to_workers
from graphql_api.settings.api import DEFAULT_IO_THREADS, ApiSettings
from tests.paths import ROOT

SETTINGS_MODULE = ROOT / "graphql_api" / "settings" / "__init__.py"
# Everything that runs in the server or its tools; tests may build their own environments.
SOURCES = ("datastore", "graphql_api", "deploy", "bench", "server.py")
READS_ENVIRONMENT = re.compile(r"\b(environ|getenv|putenv|unsetenv|environb)\b")


def source_files() -> Iterator[Path]:
    for name in SOURCES:
        path = ROOT / name
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def test_sources__environment__read_by_the_settings_module_only() -> None:
    readers = {
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in source_files()
        if path != SETTINGS_MODULE
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if READS_ENVIRONMENT.search(line)
    }

    assert readers == set()
    # The pattern does find a reader: the settings module itself.
    assert READS_ENVIRONMENT.search(SETTINGS_MODULE.read_text())
    assert len(list(source_files())) > 50


class RecordingEnv(Mapping[str, str]):
    """An environment that counts how often each variable is looked up."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.lookups: dict[str, int] = {}

    def __getitem__(self, key: str) -> str:
        self.lookups[key] = self.lookups.get(key, 0) + 1
        return self.values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def test_from_env__io_threads__their_own_setting_not_the_dynamodb_pool() -> None:
    # The threads run no DynamoDB call any more: the connection pool's size leaves them be.
    settings = Settings.from_env({"DYNAMODB_POOL_SIZE": "7"})

    assert settings.datastore.pool_size == 7
    assert settings.api.io_threads == DEFAULT_IO_THREADS == 16
    assert Settings.from_env({"IO_THREADS": "4", "DYNAMODB_POOL_SIZE": "7"}).api.io_threads == 4


def test_from_env__empty__every_group_at_its_defaults() -> None:
    settings = Settings.from_env({})

    assert settings.datastore == DatastoreSettings.from_env({})
    assert settings.api == ApiSettings.from_env({})
    assert settings.server == ServerSettings()


def test_load__environment__each_group_read_and_overrides_win(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "HOST": "0.0.0.0",
        "PORT": "9001",
        "WORKERS": "3",
        "SHUTDOWN_GRACE_SECONDS": "0",
        "HR_DEMO_DATA": "1",
        "SERVE_UNMIGRATED_DATA": "true",
        "HR_TABLE_NAME": "hr-settings-test",
        "DYNAMODB_ENDPOINT": "http://127.0.0.1:1",
        "DYNAMODB_POOL_SIZE": "12",
        "MAX_ALIASES": "3",
        "LOG_FORMAT": "json",
    }.items():
        monkeypatch.setenv(name, value)

    settings = Settings.load({"MAX_ALIASES": "4"})

    assert settings.server == ServerSettings(
        host="0.0.0.0", port=9001, workers=3, shutdown_grace_seconds=0, demo_data=True, serve_unmigrated=True
    )
    assert settings.datastore.table_name == "hr-settings-test"
    assert settings.datastore.endpoint_url == "http://127.0.0.1:1"
    assert (settings.datastore.pool_size, settings.api.io_threads) == (12, DEFAULT_IO_THREADS)
    assert settings.api.max_aliases == 4
    assert settings.api.log_format == "json"


def test_load__proxy_variables__the_datastores_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for lowercase in ("https_proxy", "no_proxy"):  # they would win
        monkeypatch.delenv(lowercase, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost")

    proxies = Settings.load().datastore.proxies

    assert proxies == Proxies(https=Proxy("proxy.internal", 3128), no_proxy="localhost")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PORT": "http"}, "PORT must be an integer, got 'http'"),
        ({"WORKERS": "0"}, "WORKERS must be at least 1, got 0"),
        ({"SHUTDOWN_GRACE_SECONDS": "-1"}, "SHUTDOWN_GRACE_SECONDS must be at least 0, got -1"),
        ({"HR_DEMO_DATA": "2"}, "HR_DEMO_DATA must be true or false, got '2'"),
        ({"SERVE_UNMIGRATED_DATA": "anyway"}, "SERVE_UNMIGRATED_DATA must be true or false, got 'anyway'"),
        ({"DYNAMODB_POOL_SIZE": "many"}, "DYNAMODB_POOL_SIZE must be an integer, got 'many'"),
        ({"IO_THREADS": "0"}, "IO_THREADS must be at least 1, got 0"),
        ({"MAX_TOKENS": "0"}, "MAX_TOKENS must be at least 1, got 0"),
    ],
)
def test_from_env__unusable_value__config_error_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env)

    assert str(raised.value) == message


def test_hand_down_to_workers__endpoint_and_metrics_dir__a_fresh_process_loads_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Set first, so monkeypatch puts back whatever was there before the test.
    monkeypatch.setenv("DYNAMODB_ENDPOINT", "")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")

    hand_down_to_workers(dynamodb_endpoint="http://127.0.0.1:1", metrics_dir=str(tmp_path))
    # A worker is a fresh interpreter that loads the settings from what it inherits.
    program = (
        "import os; from graphql_api.settings import Settings; "
        "print(Settings.load().datastore.endpoint_url, os.environ['PROMETHEUS_MULTIPROC_DIR'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=child_environment({}), capture_output=True, text=True, check=True
    )

    assert result.stdout.split() == ["http://127.0.0.1:1", str(tmp_path)]


def test_child_environment__overrides__on_top_of_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HR_TABLE_NAME", "ours")
    monkeypatch.setenv("MAX_ALIASES", "5")

    env = child_environment({"HR_TABLE_NAME": "theirs"})

    assert (env["HR_TABLE_NAME"], env["MAX_ALIASES"], env["PATH"]) == ("theirs", "5", os.environ["PATH"])


def test_defaults__download_caches__both_the_repositorys_own() -> None:
    """GraphiQL's bundles and DynamoDB Local's jar are fetched into one cache, the repository's
    `.cache/` (git-ignored), wherever the settings modules sit in the tree."""
    loaded = Settings.from_env({})
    assert loaded.api.graphiql_cache_dir == loaded.datastore.local_cache_dir == ROOT / ".cache"
