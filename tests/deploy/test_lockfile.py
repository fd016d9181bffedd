"""The locks are the one source of versions: .venv is the dev lock, and nothing drifts from them.

requirements-dev.lock and requirements.lock come from pyproject.toml through `make lock`;
deploy/requirements-lambda.txt and the Makefile's uv come from the locks (deploy/lockfile.py).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from deploy import lockfile

# The compiled executor relies on internals of these (graphql_api/execution/), so their upgrade
# is a decision taken with `make lock LOCK_ARGS='--upgrade-package ...'`, never a drift.
RELIED_ON = ("strawberry-graphql", "graphql-core", "aiodataloader")

UV = Path(sys.executable).with_name("uv")
OURS = "hr-graphql (pyproject.toml)"  # how a lock annotates what pyproject.toml asks for itself


def _pyproject_requirements(*extras: str) -> list[Requirement]:
    """pyproject.toml's runtime requirements and those of the named extras, our own extras expanded."""
    project = tomllib.loads((lockfile.ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(text) for text in project["dependencies"]]
    pending = list(extras)
    while pending:
        for text in project["optional-dependencies"][pending.pop()]:
            requirement = Requirement(text)
            if requirement.name == project["name"]:
                pending.extend(requirement.extras)
            else:
                requirements.append(requirement)
    return requirements


def test_lambda_requirements__are_the_runtime_lock() -> None:
    assert lockfile.LAMBDA_REQUIREMENTS.read_text() == lockfile.lambda_requirements(), (
        "deploy/requirements-lambda.txt and requirements.lock have drifted apart: run `make lock`"
    )
    entries = {entry.name: entry for entry in lockfile.read(lockfile.LAMBDA_REQUIREMENTS)}
    assert {"mangum", "strawberry-graphql", "boto3", "uvicorn"} <= entries.keys()
    assert "pycurl" not in entries
    assert all(entry.hashes for entry in entries.values())


def test_runtime_lock__is_the_dev_locks_runtime_part_file_for_file() -> None:
    dev = {(entry.name, entry.version): entry for entry in lockfile.read(lockfile.DEV_LOCK)}
    runtime = lockfile.read(lockfile.RUNTIME_LOCK)
    assert len(runtime) > 30
    for entry in runtime:
        assert entry.hashes, entry.name
        assert (entry.name, entry.version) in dev, f"{entry.name}=={entry.version} is not in the dev lock"
        assert entry.hashes == dev[entry.name, entry.version].hashes, entry.name


def test_locks__hold_exactly_what_pyproject_asks_within_its_ranges() -> None:
    # A requirement added, dropped or narrowed in pyproject.toml without `make lock` fails here.
    for lock, extras in ((lockfile.RUNTIME_LOCK, ()), (lockfile.DEV_LOCK, ("dev",))):
        requirements = _pyproject_requirements(*extras)
        pinned = lockfile.versions(lock)
        for requirement in requirements:
            name = canonicalize_name(requirement.name)
            assert name in pinned, f"{lock.name} lacks {requirement}: run `make lock`"
            assert all(requirement.specifier.contains(version) for version in pinned[name]), (
                f"{lock.name} pins {name} {pinned[name]} outside {requirement}: run `make lock`"
            )
        asked_by_us = {entry.name for entry in lockfile.read(lock) if OURS in entry.via}
        assert asked_by_us == {canonicalize_name(requirement.name) for requirement in requirements}, lock.name


def test_locks__pin_each_library_whose_internals_we_rely_on_to_one_version__the_one_installed() -> None:
    for name in RELIED_ON:
        versions = {lock.name: lockfile.versions(lock)[name] for lock in (lockfile.DEV_LOCK, lockfile.RUNTIME_LOCK)}
        (version,) = versions["requirements.lock"]
        assert versions["requirements-dev.lock"] == [version], name
        assert importlib.metadata.version(name) == version, name


def test_environment__is_exactly_the_dev_lock() -> None:
    # uv pip sync's dry run names anything missing, at another version, or installed but not locked.
    result = subprocess.run(
        [str(UV), "pip", "sync", "--dry-run", "--offline", "--require-hashes", "--python", sys.executable, "-"],
        input=lockfile.DEV_LOCK.read_text(),
        cwd=lockfile.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Would make no changes" in result.stderr, result.stderr


def test_uv_requirement__is_the_locked_uv_with_every_hash__the_uv_in_use() -> None:
    (version,) = lockfile.versions(lockfile.DEV_LOCK)["uv"]
    requirement = lockfile.uv_requirement()
    assert requirement.startswith(f"uv=={version} ")
    assert requirement.count("--hash=sha256:") > 1  # one per wheel and the sdist, for every platform
    running = subprocess.run([str(UV), "--version"], capture_output=True, text=True, check=True).stdout
    assert running.split()[:2] == ["uv", version]
