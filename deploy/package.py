"""``make package``: the Lambda deployment zip, from pinned wheels for Lambda's platform.

The wheels are deploy/requirements-lambda.txt's: requirements.lock's, each with
its hashes (deploy/lockfile.py derives the file; ``make lock`` rewrites it).

Wheels are installed for ``manylinux2014_x86_64`` and the template's runtime (CPython 3.11)
whatever machine builds the zip, binary-only, so nothing is compiled here for the wrong
platform. The zip holds the dependencies, then our packages, at its root, as Lambda expects.

Each module ships with its bytecode beside its source (kept for tracebacks): Lambda's
/var/task is read-only, so without it every cold start compiles every module from source.
The .pyc files are unchecked-hash ones: the zip is immutable, and a timestamp .pyc records its
source's mtime to the second, which a zip keeps to two seconds and in no time zone, so an
unpacked source can look newer and every .pyc be ignored. A .pyc is read only by the Python
version that wrote it, so it is compiled only when the building interpreter is the runtime's;
otherwise the zip is built without and ``make package`` says so.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import io
import py_compile
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
REQUIREMENTS: Final = ROOT / "deploy" / "requirements-lambda.txt"
PACKAGES: Final = ("datastore", "graphql_api")
PLATFORM: Final = "manylinux2014_x86_64"
# The functions' runtime, deploy/cloudformation.py's RUNTIME (tests/deploy/test_package.py holds
# the two equal); not imported from there, so that any Python with pip can build the zip.
PYTHON_VERSION: Final = "3.11"
DEFAULT_OUTPUT: Final = ROOT / "build" / "lambda.zip"
# botocore ships the model of every AWS service, half the zip; the functions make clients of
# these alone (tests/deploy/test_package.py holds this list to the clients the code makes).
BOTOCORE_SERVICES: Final = frozenset(
    {"apigatewaymanagementapi", "dynamodb", "dynamodbstreams", "secretsmanager", "sqs", "sts"}
)


class PackageError(Exception):
    """pip could not install the pinned wheels; the message has pip's last lines."""


def install_dependencies(target: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",  # the requirements file is the full, pinned closure
            "--no-compile",  # compile_bytecode writes the zip's, for the runtime's Python
            "--require-hashes",  # each file must be one the lock names (deploy/lockfile.py)
            "--platform",
            PLATFORM,
            "--python-version",
            PYTHON_VERSION,
            "--implementation",
            "cp",
            "--only-binary=:all:",
            "--target",
            str(target),
            "--requirement",
            str(REQUIREMENTS),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise PackageError(f"pip could not install the Lambda dependencies:\n{tail}")


def prune_botocore(site: Path) -> None:
    """Drop the models of the services no function makes a client of (botocore reads a model
    only when a client of its service is made)."""
    for entry in (site / "botocore" / "data").iterdir():
        if entry.is_dir() and entry.name not in BOTOCORE_SERVICES:
            shutil.rmtree(entry)


def compiles_bytecode() -> bool:
    """Whether this interpreter writes bytecode the runtime reads: a .pyc's magic number is
    its Python's major.minor, and any other ignores it."""
    return f"{sys.version_info.major}.{sys.version_info.minor}" == PYTHON_VERSION


class BytecodeError(Exception):
    """A module of the zip does not compile; the message has compileall's output."""


def compile_bytecode(staging: Path) -> None:
    """Write every module's .pyc into its __pycache__, as unchecked-hash ones: Python loads them
    without reading the source's mtime or bytes. ``stripdir`` keeps the scratch directory's
    name out of them (a loaded module's file names are its source's path anyway)."""
    failures = io.StringIO()
    with contextlib.redirect_stdout(failures):  # quiet=1: compileall prints only what failed
        compiled = compileall.compile_dir(
            staging,
            quiet=1,
            stripdir=staging,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    if not compiled:
        raise BytecodeError(f"a module of the zip does not compile:\n{failures.getvalue().strip()}")


def _zip_tree(archive: zipfile.ZipFile, root: Path, tree: Path) -> None:
    for path in sorted(tree.rglob("*")):
        if path.is_dir():
            continue
        archive.write(path, path.relative_to(root).as_posix())


def build(output: Path = DEFAULT_OUTPUT) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        staging = Path(scratch)
        install_dependencies(staging)
        prune_botocore(staging)
        for package in PACKAGES:
            shutil.copytree(ROOT / package, staging / package, ignore=shutil.ignore_patterns("__pycache__"))
        if compiles_bytecode():
            compile_bytecode(staging)
        partial = output.with_suffix(".zip.partial")
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            _zip_tree(archive, staging, staging)
        partial.replace(output)  # never leave a half-written zip under the real name
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.package", description=__doc__)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the zip")
    args = parser.parse_args(argv)
    path = build(args.output)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    if compiles_bytecode():
        print(f"with bytecode for Python {PYTHON_VERSION}, the functions' runtime")
    else:
        print(
            f"without bytecode: this is Python {sys.version_info.major}.{sys.version_info.minor} and the"
            f" functions' runtime is Python {PYTHON_VERSION}, which reads no other version's, so each cold"
            f" start compiles every module from source; build it with Python {PYTHON_VERSION} to ship bytecode"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
