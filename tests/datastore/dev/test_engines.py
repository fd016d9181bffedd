"""Engines of any release on a data directory, found from /proc, and refused by DynamoDBLocal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from datastore.config import DatastoreSettings
from datastore.dev import engines
from datastore.dev.local import DynamoDBLocal, LocalDynamoError
from tests.legacy_layout import unlocked_engine

CACHE_DIR = DatastoreSettings.from_env({}).local_cache_dir

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="engines are found through /proc")


def test_engines_on__previous_releases_engine__found_by_its_db_path(tmp_path: Path) -> None:
    data_dir = tmp_path / "dynamodb"
    with unlocked_engine(CACHE_DIR, data_dir) as engine:
        assert engines.engines_on(data_dir) == [engine.pid]
        assert engines.engines_on(tmp_path / "elsewhere") == []
        assert engines.engines_on(data_dir, ignore=frozenset({engine.pid})) == []


def test_engines_on__relative_db_path__resolved_from_the_engines_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data" / "dynamodb"
    with unlocked_engine(CACHE_DIR, data_dir, cwd=tmp_path) as engine:
        assert engines.engines_on(data_dir) == [engine.pid]


def test_engines_on__any_process_with_the_database_file_open__found(tmp_path: Path) -> None:
    database = tmp_path / "shared-local-instance.db"
    database.touch()
    hold = "import sys, time; f = open(sys.argv[1], 'rb'); print(flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(database)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None
        holder.stdout.readline()  # the file is open
        assert engines.engines_on(tmp_path) == [holder.pid]
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert engines.engines_on(tmp_path) == []


def test_start__previous_releases_engine_on_the_data__refused_naming_its_pid(tmp_path: Path) -> None:
    data_dir = tmp_path / "dynamodb"
    with unlocked_engine(CACHE_DIR, data_dir) as engine:
        second = DynamoDBLocal(CACHE_DIR, data_dir=data_dir)
        with pytest.raises(LocalDynamoError) as refused:
            second.start()
        message = str(refused.value)
        assert f"a DynamoDB Local (pid {engine.pid}) is already running on {data_dir}" in message
        assert "\n" not in message
        assert second.pid is None and engines.engines_on(data_dir) == [engine.pid]  # no second engine
    # Gone: the lock was released with the refusal, and the data starts at once.
    with DynamoDBLocal(CACHE_DIR, data_dir=data_dir) as started:
        assert engines.engines_on(data_dir) == [started.pid]
