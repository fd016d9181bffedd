"""Pinned npm packages: fetched once, checked against the pinned integrity, never half-cached."""

from __future__ import annotations

import base64
import hashlib
import stat
import tarfile
from pathlib import Path

import pytest

from datastore.dev import npm


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
