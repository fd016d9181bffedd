"""Which modules a ``python -v`` run compiled from source and which it loaded from their .pyc.

importlib's SourceLoader says, for each module it loads from a source file, either
``# <pyc> matches <py>`` (then ``# code object from '<pyc>'``, quoted) or, when it had to compile
it, ``# code object from <py>`` (unquoted). A script run by path is compiled without a word.
"""

from __future__ import annotations

import re
from pathlib import Path

_FROM_SOURCE = re.compile(r"^# code object from (/\S+\.py)$", re.MULTILINE)
_FROM_BYTECODE = re.compile(r"^# /\S+\.pyc matches (/\S+\.py)$", re.MULTILINE)


def compiled_from_source(verbose: str, under: Path) -> list[str]:
    """The sources under ``under`` that the run's -v output (its stderr) says it compiled."""
    return [path for path in _FROM_SOURCE.findall(verbose) if Path(path).is_relative_to(under)]


def loaded_from_bytecode(verbose: str, under: Path) -> list[str]:
    """The sources under ``under`` whose .pyc the run's -v output says it used instead."""
    return [path for path in _FROM_BYTECODE.findall(verbose) if Path(path).is_relative_to(under)]
