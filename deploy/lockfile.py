"""The locks, and the files derived from them, so that no other file pins a version.

``make lock`` resolves pyproject.toml's ranges with uv into two universal lock files, each
package at one version with the hash of every file it publishes:

- ``requirements-dev.lock``: the runtime dependencies and the ``dev`` extra (which holds
  ``otel``), what ``make .venv/.installed`` installs with ``uv pip sync --require-hashes``.
- ``requirements.lock``: the runtime dependencies alone, constrained to the dev lock's versions,
  for a production install (``pip install --require-hashes -r requirements.lock``).

Derived from them here, with the standard library only (the Makefile runs this with the
machine's bare Python before anything is installed):

- ``uv-requirement``: the dev lock's own uv entry, which the Makefile installs with pip's
  ``--require-hashes`` into a throwaway venv, whose uv then builds .venv.
- ``lambda``: deploy/requirements-lambda.txt, the runtime lock's entries, which
  ``make package`` installs for Lambda's platform. tests/deploy/test_lockfile.py fails when any
  of these files drifts from the others or from pyproject.toml.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
DEV_LOCK: Final = ROOT / "requirements-dev.lock"
RUNTIME_LOCK: Final = ROOT / "requirements.lock"
LAMBDA_REQUIREMENTS: Final = ROOT / "deploy" / "requirements-lambda.txt"

LAMBDA_HEADER: Final = """\
# The runtime dependencies of the Lambda package (make package), with hashes: requirements.lock's,
# every one of which publishes a wheel for Lambda's manylinux2014 platform.
# Written by `make lock` (python -m deploy.lockfile lambda); do not edit.
# tests/deploy/test_lockfile.py fails when this file and requirements.lock drift apart.
"""

_PIN: Final = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)")


class LockError(Exception):
    """A lock does not hold what is asked of it."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One pinned package of a lock: its requirement lines (pin, marker, hashes) and why it is there."""

    name: str
    version: str
    requirement: str  # the pin and its --hash lines, as pip and uv read them
    via: tuple[str, ...]  # the annotation: who requires it ("hr-graphql (pyproject.toml)" when we do)

    @property
    def hashes(self) -> tuple[str, ...]:
        return tuple(re.findall(r"--hash=(sha256:[0-9a-f]{64})", self.requirement))


def read(lock: Path) -> list[Entry]:
    """A lock's entries in file order (a package twice when the lock forks on a Python version)."""
    entries: list[Entry] = []
    requirement: list[str] = []
    via: list[str] = []

    def close() -> None:
        if requirement:
            match = _PIN.match(requirement[0])
            if match is None:
                raise LockError(f"{lock.name}: not a pinned requirement: {requirement[0]!r}")
            name = match["name"].lower().replace("_", "-").replace(".", "-")
            text = "\n".join(requirement) + "\n"
            entries.append(Entry(name, match["version"], text, tuple(via)))
        requirement.clear()
        via.clear()

    for line in lock.read_text().splitlines():
        stripped = line.strip()
        if not line.startswith(" "):  # a header comment or the next pin
            close()
            if stripped and not stripped.startswith("#"):
                requirement.append(line)
        elif stripped.startswith("--hash="):
            requirement.append(line)
        elif stripped.startswith("# via ") or stripped.startswith("#   "):
            via.append(stripped.removeprefix("# via ").removeprefix("#   ").strip())
    close()
    return entries


def versions(lock: Path) -> dict[str, list[str]]:
    """Each package's pinned versions."""
    pinned: dict[str, list[str]] = {}
    for entry in read(lock):
        pinned.setdefault(entry.name, []).append(entry.version)
    return pinned


def uv_requirement(lock: Path = DEV_LOCK) -> str:
    """The locked uv, pin and hashes, as a requirements file pip installs with --require-hashes."""
    found = [entry for entry in read(lock) if entry.name == "uv"]
    if len(found) != 1:
        raise LockError(f"{lock.name} should pin one uv, not {len(found)}")
    return found[0].requirement


def lambda_requirements(lock: Path = RUNTIME_LOCK) -> str:
    """deploy/requirements-lambda.txt as the runtime lock now gives it."""
    return LAMBDA_HEADER + "".join(entry.requirement for entry in read(lock))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.lockfile", description=__doc__)
    parser.add_argument("what", choices=("uv-requirement", "lambda"))
    args = parser.parse_args(argv)
    if args.what == "uv-requirement":
        sys.stdout.write(uv_requirement())
    else:
        LAMBDA_REQUIREMENTS.write_text(lambda_requirements())
        print(f"wrote {LAMBDA_REQUIREMENTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
