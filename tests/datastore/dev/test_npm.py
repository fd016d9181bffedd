"""Pinned npm packages: fetched once, checked against the pinned integrity, never half-cached."""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from datastore.dev import npm

ROOT = Path(__file__).resolve().parents[3]


def fake_npm(tmp_path: Path) -> tuple[str, str]:
    """An ``npm`` whose ``pack`` copies a prepared tarball; its path and the tarball's integrity."""
    source = tmp_path / "source" / "package"
    source.mkdir(parents=True)
    (source / "index.js").write_text("export default 1;\n")
    tarball = tmp_path / "demo-1.0.0.tgz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(source, arcname="package")
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    script = tmp_path / "npm"
    # npm pack SPEC --silent --pack-destination DIR
    script.write_text(f'#!/bin/sh\ncp "{tarball}" "$5/"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script), integrity


def test_fetch__integrity_matches__unpacked_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script, integrity = fake_npm(tmp_path)
    monkeypatch.setattr("datastore.dev.npm.shutil.which", lambda name: script if name == "npm" else None)
    cache = tmp_path / "cache"
    unpacked = npm.fetch(cache, "demo@1.0.0", purpose="a test", integrity=integrity)
    assert (unpacked / "package" / "index.js").read_text() == "export default 1;\n"
    monkeypatch.setattr("datastore.dev.npm.shutil.which", lambda name: None)
    assert npm.fetch(cache, "demo@1.0.0", purpose="a test", integrity=integrity) == unpacked


def test_fetch__integrity_differs__refused_and_nothing_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script, _ = fake_npm(tmp_path)
    monkeypatch.setattr("datastore.dev.npm.shutil.which", lambda name: script if name == "npm" else None)
    cache = tmp_path / "cache"
    with pytest.raises(npm.NpmError, match="is not the pinned sha512-AAAA"):
        npm.fetch(cache, "demo@1.0.0", purpose="a test", integrity="sha512-AAAA")
    assert list(cache.iterdir()) == []


def test_fetch__no_npm__one_line_error_naming_the_purpose(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("datastore.dev.npm.shutil.which", lambda name: None)
    with pytest.raises(npm.NpmError, match=r"^npm is needed once to fetch GraphiQL \(demo@1.0.0\)"):
        npm.fetch(tmp_path, "demo@1.0.0", purpose="GraphiQL")


def test_fetch__two_processes_at_once__both_get_the_package(tmp_path: Path) -> None:
    """Two processes fetching one package into one empty cache (a server's workers on a fresh
    checkout): the second rename finds the first's directory, which is as complete, and uses it."""
    script, integrity = fake_npm(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    slow = bin_dir / "npm"  # slow enough that both have fetched before either renames
    slow.write_text(f'#!/bin/sh\nsleep 1\nexec "{script}" "$@"\n')
    slow.chmod(slow.stat().st_mode | stat.S_IEXEC)
    cache = tmp_path / "cache"
    code = (
        "from pathlib import Path; from datastore.dev import npm; "
        f"print(npm.fetch(Path({str(cache)!r}), 'demo@1.0.0', purpose='a test', integrity={integrity!r}))"
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    fetches = [
        subprocess.Popen(
            [sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    results = [fetch.communicate(timeout=60) for fetch in fetches]
    assert [fetch.returncode for fetch in fetches] == [0, 0], results
    assert {out.strip() for out, _err in results} == {str(npm.package_dir(cache, "demo@1.0.0"))}
    assert (npm.package_dir(cache, "demo@1.0.0") / "package" / "index.js").read_text() == "export default 1;\n"
    assert [path.name for path in cache.iterdir()] == ["demo-1.0.0"]  # no scratch left behind
